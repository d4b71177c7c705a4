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

// TestDefaultTmpfsIsScratchOnly: without WithTmpfs a container gets one tmpfs, on /tmp
// (sticky, world-writable, owned by the image's user); the root stays read-only.
func TestDefaultTmpfsIsScratchOnly(t *testing.T) {
	got := tmpfsMounts(t, fakeBundle(t, 65532, 65532))
	if len(got) != 1 || !slices.Contains(got["/tmp"], "mode=1777") {
		t.Errorf("tmpfs mounts %v, want /tmp alone with mode=1777", got)
	}
}

// TestWithTmpfsMountsTheContract: WithTmpfs(plan.Runtime.Tmpfs()...), what the host engine
// passes, gives a tmpfs owned by the image's user on every writable directory of the
// runtime contract (nginx cannot start on a read-only root without them) and on /tmp, and
// no other; a list of the caller's own replaces it, owned by the bundle's user.
func TestWithTmpfsMountsTheContract(t *testing.T) {
	got := tmpfsMounts(t, fakeBundle(t, 65532, 65532), WithTmpfs(plan.Runtime.Tmpfs()...))
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

	got = tmpfsMounts(t, fakeBundle(t, 1000, 1001), WithTmpfs("/srv/state"))
	opts, ok := got["/srv/state"]
	if !ok || len(got) != 1 {
		t.Fatalf("WithTmpfs(/srv/state): tmpfs mounts %v, want /srv/state alone", got)
	}
	for _, want := range []string{"uid=1000", "gid=1001", "mode=0755"} {
		if !slices.Contains(opts, want) {
			t.Errorf("tmpfs /srv/state options %q lack %s", opts, want)
		}
	}
}
