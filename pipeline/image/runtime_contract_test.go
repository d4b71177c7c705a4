package image_test

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// TestRuntimeContractMatchesPlan: the image this package assembles and the one the rendered
// Dockerfile builds (from plan.Runtime) must start, listen and write the same way.
func TestRuntimeContractMatchesPlan(t *testing.T) {
	if !slices.Equal(image.Entrypoint, plan.Runtime.Entrypoint) {
		t.Errorf("entrypoint: image %q, plan %q", image.Entrypoint, plan.Runtime.Entrypoint)
	}
	if !slices.Equal(image.ExposedPorts, plan.Runtime.Ports) {
		t.Errorf("ports: image %q, plan %q", image.ExposedPorts, plan.Runtime.Ports)
	}
	if !slices.Equal(image.WritableDirs, plan.Runtime.WritableDirs) {
		t.Errorf("writable dirs: image %q, plan %q", image.WritableDirs, plan.Runtime.WritableDirs)
	}
}

// TestAssembledConfigMatchesPlan: the config Assemble writes says what plan.Runtime says.
func TestAssembledConfigMatchesPlan(t *testing.T) {
	tree := t.TempDir()
	for _, d := range append([]string{"usr/sbin", "etc/nginx"}, plan.Runtime.WritableDirs...) {
		if err := os.MkdirAll(filepath.Join(tree, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(tree, "usr/sbin/nginx"), []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := image.Assemble(empty.Image, tree, lock.Default())
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	var ports []string
	for p := range c.ExposedPorts {
		ports = append(ports, p)
	}
	sort.Strings(ports)
	want := append([]string(nil), plan.Runtime.Ports...)
	sort.Strings(want)
	if c.User != plan.Runtime.User || c.StopSignal != plan.Runtime.StopSignal ||
		!slices.Equal(c.Entrypoint, plan.Runtime.Entrypoint) || !slices.Equal(ports, want) {
		t.Errorf("assembled config: user %q, stop %q, entrypoint %q, ports %q; plan.Runtime: %+v",
			c.User, c.StopSignal, c.Entrypoint, ports, plan.Runtime)
	}
}
