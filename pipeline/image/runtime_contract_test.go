package image

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// checkContract fails t wherever img's config or nginx layer does not say what rt says:
// exactly its user, entrypoint (and no Cmd after it), stop signal, working directory and
// ports (no port of the base's left over), and its writable directories owned by its
// user while everything else in the layer is root's.
func checkContract(t *testing.T, img v1.Image, rt plan.RuntimeConfig) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != rt.User || c.StopSignal != rt.StopSignal || c.WorkingDir != rt.WorkingDir ||
		!slices.Equal(c.Entrypoint, rt.Entrypoint) || len(c.Cmd) != 0 {
		t.Errorf("config: user %q, stop signal %q, working dir %q, entrypoint %q, cmd %q; the contract says %q, %q, %q, %q and no cmd",
			c.User, c.StopSignal, c.WorkingDir, c.Entrypoint, c.Cmd, rt.User, rt.StopSignal, rt.WorkingDir, rt.Entrypoint)
	}
	ports := slices.Sorted(maps.Keys(c.ExposedPorts))
	if want := slices.Sorted(slices.Values(rt.Ports)); !slices.Equal(ports, want) {
		t.Errorf("exposed ports %q, the contract says %q", ports, want)
	}
	for name, h := range layerEntries(t, img) {
		uid, gid := 0, 0
		for _, d := range rt.WritableDirs {
			if name == d || strings.HasPrefix(name, d+"/") {
				uid, gid = rt.UID(), rt.GID()
			}
		}
		if h.Uid != uid || h.Gid != gid {
			t.Errorf("layer entry %s owned by %d:%d, want %d:%d", name, h.Uid, h.Gid, uid, gid)
		}
	}
}

// baseWithOwnRuntime is the synthetic base with a config of its own (user, Cmd, a port,
// a stop signal, a working directory), as real bases have, none of which may survive.
func baseWithOwnRuntime(t *testing.T) v1.Image {
	t.Helper()
	base := syntheticBase(t, "amd64")
	cf, err := base.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.User = "0"
	cf.Config.Cmd = []string{"/bin/sh"}
	cf.Config.ExposedPorts = map[string]struct{}{"80/tcp": {}}
	cf.Config.StopSignal = "SIGTERM"
	cf.Config.WorkingDir = "/root"
	base, err = mutate.ConfigFile(base, cf)
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// TestAssembleWritesPlanRuntime: the assembled image carries plan.Runtime, on a base
// whose own config says otherwise. (TestAssembleConfigGolden pins the same values as
// literals, so a wrong plan.Runtime fails there.)
func TestAssembleWritesPlanRuntime(t *testing.T) {
	img, err := Assemble(baseWithOwnRuntime(t), syntheticTree(t, time.Unix(1, 0), 0, false), testLock(t))
	if err != nil {
		t.Fatal(err)
	}
	checkContract(t, img, plan.Runtime)
}

// TestAssembleFollowsPlanRuntime: image assembly reads plan.Runtime when it assembles,
// rather than keeping values of its own: with another contract in place, the image says
// that one, its writable directory is chowned to that user, and a tree without that
// directory is refused. A copy of the contract in this package would fail here.
//
// It swaps the package-level plan.Runtime for the test's duration; no test in this
// package runs in parallel.
func TestAssembleFollowsPlanRuntime(t *testing.T) {
	saved := plan.Runtime
	t.Cleanup(func() { plan.Runtime = saved })
	other := plan.RuntimeConfig{
		User:         "1000:1001",
		Entrypoint:   []string{"/usr/sbin/nginx", "-e", "stderr", "-g", "daemon off;"},
		StopSignal:   "SIGTERM",
		Ports:        []string{"9000/tcp"},
		WritableDirs: []string{"srv/state"},
		TLSDir:       "/srv/tls",
		WorkingDir:   "/srv",
	}
	plan.Runtime = other

	tree := syntheticTree(t, time.Unix(1, 0), 0, false)
	if _, err := Assemble(baseWithOwnRuntime(t), tree, testLock(t)); err == nil || !strings.Contains(err.Error(), "srv/state") {
		t.Fatalf("tree without the contract's writable directory srv/state: got %v, want an error naming it", err)
	}
	if err := os.MkdirAll(filepath.Join(tree, "srv/state/sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := Assemble(baseWithOwnRuntime(t), tree, testLock(t))
	if err != nil {
		t.Fatal(err)
	}
	checkContract(t, img, other)
}
