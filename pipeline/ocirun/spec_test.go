package ocirun

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// tmpfsMounts writes the runtime spec a container of b gets with opts and returns its
// tmpfs mounts by destination, with their options.
func tmpfsMounts(t *testing.T, b *Bundle, opts ...Option) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	if err := b.writeSpec(dir, makeOptions(opts)); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Root   struct{ Readonly bool }
		Mounts []struct {
			Destination, Type string
			Options           []string
		}
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	if !spec.Root.Readonly {
		t.Error("root is writable by default")
	}
	out := map[string][]string{}
	for _, m := range spec.Mounts {
		if m.Type == "tmpfs" {
			out[m.Destination] = m.Options
		}
	}
	return out
}

// fakeBundle is a Bundle as Prepare leaves it, with the parts of umoci's config.json
// writeSpec edits; no runc or umoci is involved.
func fakeBundle(t *testing.T, uid, gid int) *Bundle {
	return &Bundle{
		dir: t.TempDir(),
		spec: map[string]any{
			"process": map[string]any{"user": map[string]any{"uid": uid, "gid": gid}, "env": []any{"TERM=xterm"}},
			"linux":   map[string]any{"namespaces": []any{map[string]any{"type": "network"}}},
			"mounts":  []any{},
		},
		uid: uid, gid: gid,
	}
}

// TestDefaultTmpfsIsTheContract: a container gets a tmpfs, owned by the image's user, on
// every writable directory of plan.Runtime (nginx cannot start on a read-only root without
// them) and on /tmp (sticky, world-writable), and no other.
func TestDefaultTmpfsIsTheContract(t *testing.T) {
	got := tmpfsMounts(t, fakeBundle(t, 65532, 65532))
	for _, d := range plan.Runtime.WritableDirs {
		opts, ok := got["/"+d]
		if !ok {
			t.Errorf("no tmpfs on the contract's writable directory /%s (mounts: %v)", d, got)
			continue
		}
		for _, want := range []string{"uid=65532", "gid=65532", "mode=0755", "nosuid", "nodev", "noexec"} {
			if !slices.Contains(opts, want) {
				t.Errorf("tmpfs /%s options %q lack %s", d, opts, want)
			}
		}
	}
	if opts := got["/tmp"]; !slices.Contains(opts, "mode=1777") {
		t.Errorf("tmpfs /tmp options %q, want mode=1777", opts)
	}
	if len(got) != len(plan.Runtime.WritableDirs)+1 {
		t.Errorf("tmpfs mounts %v, want the %d writable directories and /tmp", got, len(plan.Runtime.WritableDirs))
	}
	// The tmpfs list, not a fixed set, makes the mounts.
	only := func(o *options) { o.tmpfs = []string{"/data"} }
	if got := tmpfsMounts(t, fakeBundle(t, 65532, 65532), only); len(got) != 1 || got["/data"] == nil {
		t.Errorf("tmpfs [/data]: tmpfs mounts %v", got)
	}
}

// TestTmpfsFollowsPlanRuntime: ocirun reads plan.Runtime for each container rather than a
// copy of it, and owns the mounts by the bundle's user (the image's, from its config).
// It swaps the package-level plan.Runtime; no test in this package runs in parallel.
func TestTmpfsFollowsPlanRuntime(t *testing.T) {
	saved := plan.Runtime
	t.Cleanup(func() { plan.Runtime = saved })
	plan.Runtime.WritableDirs = []string{"srv/state"}
	got := tmpfsMounts(t, fakeBundle(t, 1000, 1001))
	opts, ok := got["/srv/state"]
	if !ok || len(got) != 2 || got["/tmp"] == nil {
		t.Fatalf("tmpfs mounts %v, want /srv/state and /tmp", got)
	}
	for _, want := range []string{"uid=1000", "gid=1001"} {
		if !slices.Contains(opts, want) {
			t.Errorf("tmpfs /srv/state options %q lack %s", opts, want)
		}
	}
	if _, ok := got["/var/cache/nginx"]; ok {
		t.Errorf("tmpfs on /var/cache/nginx, which the swapped contract does not name: %v", got)
	}
}
