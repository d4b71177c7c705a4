//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// nobody is the unprivileged account the host build runs as (Debian's nobody:nogroup).
const nobody = 65534

// TestHostBuildAsNonRoot is the README's `go run ./ci build --engine host --no-smoke
// --output nginx.tar` as a normal user: the built ci program run as uid 65534 (setpriv, no
// change to the system's accounts), with HOME and XDG_CACHE_HOME in a directory of its own.
// The sources and stage outputs land in $XDG_CACHE_HOME/nginx-forge, and it writes the image
// tarball, which carries the upstream licenses. (Issue 23: the cache sat in a root-owned
// directory, so the README said sudo.)
//
// The stack it builds is the test lock's default, which the shared build cache holds (this
// test builds it there as root when no other test has): compiling all of it again as this
// user would be a second full compile of one combination in one run (10 minutes and more on a
// loaded machine) for nothing the stage key can tell apart, as the key does not hold the
// user. So the user's cache starts each run empty but for copies of the shared cache's stages
// (owned by the user; the executor checks each copy against its manifest before it reuses
// it) and the user compiles zlib, the cheapest stage, itself, every run: the executor's whole
// stage path (its cache, scratch and lock directories, the source copy, configure, make and
// install into OUT) as the user, where a step that needs root or a path only root can write
// fails. zlib's output must be byte for byte root's (the stages' manifests); that nginx's
// does not depend on the directories it is built in is pipeline/engine/host's
// TestNginxOnlyChangeRebuildsOnlyNginx.
func TestHostBuildAsNonRoot(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	testenv.Root(t) // to become another user
	setpriv := testenv.Tool(t, "setpriv", "util-linux")
	reg := registrytest.Start(t)
	base := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()
	bin := ciBinary(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil { // MkdirTemp made it 0700
		t.Fatal(err)
	}
	home, err := os.MkdirTemp("", "nginx-forge-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })
	lockFile := filepath.Join(home, "stack.lock.json")
	b, err := os.ReadFile(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lockFile, b, 0o644); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	// Root's build of the same lock on the shared cache: its stages and their keys.
	shared := sharedStackStages(ctx, t, testLockPath, srv.URL)
	xdgCache := filepath.Join(home, "cache")
	userStages := filepath.Join(xdgCache, "nginx-forge", "stages")
	if err := os.MkdirAll(userStages, 0o700); err != nil {
		t.Fatal(err)
	}
	compiled := map[string]bool{"zlib": true} // by the user, every run
	for _, s := range shared.Stages {
		if compiled[s.Name] {
			continue
		}
		if out, err := exec.Command("cp", "-a", filepath.Dir(s.Out), filepath.Join(userStages, s.Key)).CombinedOutput(); err != nil {
			t.Fatalf("seeding the user's cache with stage %s: %v\n%s", s.Name, err, out)
		}
	}
	if err := chownTree(home, nobody); err != nil {
		t.Fatal(err)
	}
	output := filepath.Join(home, "nginx.tar")

	cmd := exec.CommandContext(ctx, setpriv, "--reuid", "65534", "--regid", "65534", "--clear-groups", "--",
		bin, "build", "--engine", "host", "--no-smoke", "--lock", lockFile, "--mirror", srv.URL,
		"--runtime-image", base.String(), "--output", output)
	cmd.Dir = home
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + xdgCache, "LANG=C"}
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("host build as uid %d took %s:\n%s", nobody, time.Since(start).Round(time.Second), out)
	if err != nil {
		t.Fatalf("host build as uid %d: %v", nobody, err)
	}

	// The user's cache holds exactly root's stages (one key per stage: the user does not
	// change what is built), the seeded ones reused and zlib built by this run, as the user,
	// all with root's bytes.
	entries, err := os.ReadDir(userStages)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(shared.Stages) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("the user's cache holds %d stages %v, root's build has %d: the user's build did not reuse root's stages", len(entries), names, len(shared.Stages))
	}
	for _, s := range shared.Stages {
		dir := filepath.Join(userStages, s.Key)
		m, err := os.Stat(filepath.Join(dir, "meta.json"))
		if err != nil {
			t.Errorf("stage %s (key %s) is not in the user's cache: %v", s.Name, s.Key[:12], err)
			continue
		}
		if built := m.ModTime().After(start); built != compiled[s.Name] {
			t.Errorf("stage %s: built by the user's run %v, want %v", s.Name, built, compiled[s.Name])
		}
		if owner := fileOwner(m); owner != nobody {
			t.Errorf("%s is owned by uid %d, want %d", m.Name(), owner, nobody)
		}
		mine, err1 := os.ReadFile(filepath.Join(dir, "manifest.json"))
		roots, err2 := os.ReadFile(filepath.Join(filepath.Dir(s.Out), "manifest.json"))
		if err := errors.Join(err1, err2); err != nil || !bytes.Equal(mine, roots) {
			t.Errorf("stage %s: the user's output differs from root's (manifest.json of %s and %s): %v", s.Name, dir, filepath.Dir(s.Out), err)
		}
	}

	fi, err := os.Stat(output)
	if err != nil {
		t.Fatalf("--output was not written: %v", err)
	}
	if owner := fileOwner(fi); owner != nobody {
		t.Errorf("%s is owned by uid %d, want %d", output, owner, nobody)
	}
	if entries, err := os.ReadDir(filepath.Join(xdgCache, "nginx-forge", "sources")); err != nil || len(entries) == 0 {
		t.Errorf("the user's cache %s/nginx-forge/sources holds nothing: %v", xdgCache, err)
	}
	if _, err := os.Stat(testenv.BuildCacheDir()); err == nil {
		// Shared by root's builds: nothing of this user's may be in it.
		filepath.WalkDir(testenv.BuildCacheDir(), func(p string, d os.DirEntry, err error) error {
			if err == nil {
				if fi, err := d.Info(); err == nil && fileOwner(fi) == nobody {
					t.Errorf("%s belongs to the non-root build", p)
					return errors.New("stop")
				}
			}
			return nil
		})
	}

	// The image carries the upstream licenses.
	img, err := tarball.ImageFromPath(output, nil)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	// The manifest names the --runtime-image's repository (a loopback port that differs per
	// run), so the nginx layer's digest is what compares with other builds of the lock.
	if d, err := layers[len(layers)-1].Digest(); err == nil {
		t.Logf("the nginx layer built as uid %d: %s", nobody, d)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	found := map[string]int{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if rest, ok := strings.CutPrefix(h.Name, "usr/share/licenses/"); ok && h.Typeflag == tar.TypeReg && h.Size > 100 {
			found[strings.Split(rest, "/")[0]]++
		}
	}
	for _, c := range []string{"nginx", "openssl", "pcre2", "zlib", "brotli", "ngx_brotli", "libcrypt"} {
		if found[c] == 0 {
			t.Errorf("the image's nginx layer has no license of %s under usr/share/licenses (found %v)", c, found)
		}
	}
}

func fileOwner(fi os.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// sharedStackStages builds lockPath's default stack as root on the shared build cache (every
// stage taken from it when another test built it first) and returns the executor's result:
// each stage's key and output there.
func sharedStackStages(ctx context.Context, t *testing.T, lockPath, mirror string) *host.Result {
	t.Helper()
	l, err := lock.Load(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	cache := testenv.BuildCacheDir()
	verified, err := source.New(source.WithMirror(mirror), source.WithCacheDir(filepath.Join(cache, "sources"))).FetchAll(ctx, l)
	if err != nil {
		t.Fatalf("fetching %s's sources into the shared cache: %v", lockPath, err)
	}
	paths := map[string]string{}
	for name, v := range verified {
		paths[name] = v.Prepared
	}
	res, err := host.New(host.WithCacheDir(cache)).Run(ctx, p, paths)
	if err != nil {
		t.Fatalf("building %s on the shared cache %s: %v", lockPath, cache, err)
	}
	return res
}

// chownTree gives every file under dir, links included, to uid (and its group of the same id).
func chownTree(dir string, uid int) error {
	return filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
}
