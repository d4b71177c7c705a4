//go:build integration

package basetest

import (
	"context"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestBuilderImage: the builder stand-in has apt, dpkg and bash but no compiler (the
// Dockerfile must install it), keeps a Debian system's owners and setuid bits, and carries
// no device nodes, stale package lists or downloaded packages.
func TestBuilderImage(t *testing.T) {
	testenv.Tool(t, "debootstrap", "debootstrap")
	testenv.Root(t)
	img, err := BuilderImage(context.Background(), Options{Progress: testenv.Progress(t)})
	if err != nil {
		testenv.Missing(t, "the stand-in builder image ("+err.Error()+")", "let the machine reach the Debian mirror from the apt sources (or set "+testenv.DebianMirrorEnv+")")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || len(cf.Config.Env) == 0 || !strings.HasPrefix(cf.Config.Env[0], "PATH=") {
		t.Errorf("config: os %q, arch %q, env %q", cf.OS, cf.Architecture, cf.Config.Env)
	}
	seen := imageFiles(t, img)
	for _, want := range []string{"usr/bin/apt-get", "usr/bin/dpkg", "usr/bin/bash", "etc/apt/sources.list"} {
		if _, ok := seen[want]; !ok {
			t.Errorf("no %s in the builder", want)
		}
	}
	for name := range seen {
		switch {
		case name == "usr/bin/gcc" || name == "usr/bin/cc" || name == "usr/bin/make":
			t.Errorf("%s is in the builder: the Dockerfile's apt step would not be tested", name)
		case strings.HasPrefix(name, "dev/"):
			t.Errorf("device node or file %s in the builder", name)
		case strings.HasPrefix(name, "var/lib/apt/lists/") && strings.Contains(name, "_"):
			t.Errorf("stale package list %s in the builder", name)
		case strings.HasSuffix(name, ".deb"):
			t.Errorf("downloaded package %s in the builder", name)
		}
	}
	if h := seen["etc/shadow"].hdr; h == nil || h.Gid == 0 {
		t.Errorf("etc/shadow is missing or its group is root (owners were not kept): %+v", h)
	}
	if h := seen["usr/bin/passwd"].hdr; h == nil || h.Mode&04000 == 0 {
		t.Errorf("usr/bin/passwd is missing or lost its setuid bit: %+v", h)
	}
}
