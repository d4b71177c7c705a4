package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"log"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
)

func pushPlatform(t *testing.T, repo, arch string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref, _ := name.NewDigest(repo + "@" + d.String())
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func runManifestCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"manifest"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestManifestCommand(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nginx-forge"
	amd := pushPlatform(t, repo, "amd64")
	arm := pushPlatform(t, repo, "arm64")

	// Dry run: prints the index, writes nothing.
	code, out, errs := runManifestCmd(t, "--image", repo+":1.26.3,latest", "--dry-run", amd, repo+"@"+arm)
	if code != 0 || !strings.Contains(out, `"architecture": "arm64"`) || !strings.Contains(out, "nothing written") {
		t.Fatalf("dry run: code %d\n%s\n%s", code, out, errs)
	}
	if _, err := remote.Head(mustTagRef(t, repo+":latest")); err == nil {
		t.Fatal("dry run created the tag")
	}

	code, out, errs = runManifestCmd(t, "--image", repo+":1.26.3,latest", amd, arm)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	idx, err := remote.Index(mustTagRef(t, repo+":latest"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	if strings.TrimSpace(out) != repo+"@"+d.String() {
		t.Errorf("printed %q, tag latest is %s", out, d)
	}
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 2 || im.Manifests[0].Platform.Architecture != "amd64" {
		t.Errorf("index %+v", im.Manifests)
	}

	for _, bad := range [][]string{
		{amd}, // no --image
		{"--image", repo, "--ref", "refs/heads/feature", amd}, // no tag given and none decided
		{"--image", repo + ":x"},                              // no digests
		{"--image", repo + ":x", "latest"},                    // not a digest
	} {
		if code, _, errs := runManifestCmd(t, bad...); code != 2 {
			t.Errorf("manifest %v: exit %d (want 2): %s", bad, code, errs)
		}
	}
}

func mustTagRef(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// One tag rule: for the same lock, ref and revision, the CI join (ci manifest --image REPO)
// moves exactly the tags ci build --push would, in the same order.
func TestBuildAndManifestDecideTheSameTags(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nginx-forge"
	amd := pushPlatform(t, repo, "amd64")
	lockFile := "../pipeline/lock/testdata/trixie.lock.json"
	l, _, err := forge.LoadLock(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	for _, ref := range []string{"refs/heads/main", "refs/tags/v1.4.0", ""} {
		args := []string{"--push", "--image", repo, "--lock", lockFile, "--ref", ref, "--revision", sha}
		fs := flag.NewFlagSet("build", flag.ContinueOnError)
		f := declareBuildFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		req, err := f.request()
		if err != nil {
			t.Fatal(err)
		}
		fromBuild := image.Tags(l, req.TagEvent())
		code, out, errs := runManifestCmd(t, "--image", repo, "--lock", lockFile, "--ref", ref, "--revision", sha, "--dry-run", amd)
		if code != 0 {
			t.Fatalf("manifest --ref %q: exit %d: %s", ref, code, errs)
		}
		want := "move tags " + strings.Join(fromBuild, ", ") + ";"
		if !strings.Contains(out, want) {
			t.Errorf("--ref %q: build moves %v; manifest says:\n%s", ref, fromBuild, out)
		}
		// build.yml's merge job names the index's tags with ci tags.
		var tout, terr bytes.Buffer
		if code := run(context.Background(), []string{"tags", "--lock", lockFile, "--ref", ref, "--revision", sha}, &tout, &terr); code != 0 ||
			strings.TrimSpace(tout.String()) != strings.Join(fromBuild, ",") {
			t.Errorf("--ref %q: ci tags printed %q (exit %d, %s); build moves %v", ref, tout.String(), code, terr.String(), fromBuild)
		}
		if ref != "" && !slices.Contains(fromBuild, "latest") {
			t.Errorf("--ref %q: %v lacks latest", ref, fromBuild)
		}
	}
}
