//go:build integration

package main

import (
	"archive/tar"
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
// directory, so the README said sudo.) That cache is kept between runs, beside the shared
// build cache and owned by the user, like any user's: the stack is compiled as this user
// when its stages' inputs change, and taken from the user's own cache otherwise.
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
	xdgCache := filepath.Join(filepath.Dir(testenv.BuildCacheDir()), "nonroot-cache")
	if err := os.MkdirAll(xdgCache, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{home, lockFile, xdgCache} {
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
	}
	output := filepath.Join(home, "nginx.tar")

	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
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

	fi, err := os.Stat(output)
	if err != nil {
		t.Fatalf("--output was not written: %v", err)
	}
	if owner := fileOwner(fi); owner != nobody {
		t.Errorf("%s is owned by uid %d, want %d", output, owner, nobody)
	}
	cache := filepath.Join(xdgCache, "nginx-forge")
	for _, d := range []string{"sources", "stages"} {
		entries, err := os.ReadDir(filepath.Join(cache, d))
		if err != nil || len(entries) == 0 {
			t.Errorf("the user's cache %s/%s holds nothing: %v", cache, d, err)
		}
	}
	if _, err := os.Stat("/var/cache/nginx-forge/build/stages"); err == nil {
		// Shared by root's builds: it may exist, but nothing of this user's may be in it.
		filepath.WalkDir("/var/cache/nginx-forge/build", func(p string, d os.DirEntry, err error) error {
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
