//go:build integration

package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// Issue 35, acceptance: the mirror serves the real zlib-ng 2.2.2 archive made hostile in each
// way (hostileArchives: the multi-member archive first) and the real files otherwise.
// `ci build --engine host` of the AWS-LC variant, as typed, refuses before any compiler runs,
// naming the file and the rule: exit 1, no --output, no stage in the build cache, and the
// file nowhere in the source cache.
func TestBuildRefusesHostileGitArchives(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	const file = "zlib-ng-2.2.2-git.tar.gz"
	real, err := os.ReadFile(filepath.Join(mirror, file))
	if err != nil {
		testenv.Missing(t, file+" in the mirror", "run .ci/fetch-sources again (it copies ../shared/upstream's archives)")
	}
	l, err := lock.Load(testenv.AWSLCTestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	tree := l.MustComponent(lock.ZlibNG).Git.Tree
	reg := registrytest.Start(t)
	base := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	files := http.FileServer(http.Dir(mirror))
	for _, h := range hostileArchives(t, real) {
		t.Run(h.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/"+file {
					w.Write(h.body)
					return
				}
				files.ServeHTTP(w, r)
			}))
			defer srv.Close()
			dir := t.TempDir()
			out, cache := filepath.Join(dir, "nginx.tar"), filepath.Join(dir, "cache")
			code, stdout, stderr := runWithin(t, 5*time.Minute, "build", "--engine", "host", "--no-smoke", "--tls", "aws-lc", "--zlib", "zlib-ng",
				"--lock", testenv.AWSLCTestLockPath(), "--mirror", srv.URL, "--cache", cache, "--runtime-image", base.String(), "--output", out)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range []string{"archive " + file + " from " + srv.URL, h.rule, "nothing from it was used or cached", "nothing was built"} {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("--output %s exists: %v", out, err)
			}
			if _, err := os.Stat(filepath.Join(cache, "stages")); !os.IsNotExist(err) {
				t.Errorf("a stage ran: %v", err)
			}
			noCachedFile(t, cache, file, tree)
		})
	}
}

// Issue 35: unpacking had no bound, and SIGTERM was ignored for 39-55 s while a 48 GiB
// archive was hashed. Now `ci build` that is unpacking the 48 GiB archive (served as the
// git-pinned zlib-ng) ends at SIGTERM within 2 s (3 allowed: a loaded machine), exit 143,
// with no --output, no stage built and no unpacking directory left.
func TestSIGTERMEndsABuildWhileItUnpacks(t *testing.T) {
	bin := ciBinary(t)
	mirror := testenv.MirrorDir(t)
	const file = "zlib-ng-2.2.2-git.tar.gz"
	bomb := oneStreamBomb(t, "zlib-ng-2.2.2", 192, 256<<20)
	files := http.FileServer(http.Dir(mirror))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/"+file {
			w.Write(bomb)
			return
		}
		files.ServeHTTP(w, r)
	}))
	defer srv.Close()
	reg := registrytest.Start(t)
	base := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	dir := t.TempDir()
	out, cache := filepath.Join(dir, "nginx.tar"), filepath.Join(dir, "cache")
	cmd := exec.Command(bin, "build", "--engine", "host", "--no-smoke", "--tls", "aws-lc", "--zlib", "zlib-ng",
		"--lock", testenv.AWSLCTestLockPath(), "--mirror", srv.URL, "--cache", cache, "--runtime-image", base.String(), "--output", out)
	cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=", "GITHUB_TOKEN=")
	var log strings.Builder
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	// Wait until the bomb's first file is being written: the unpacking is under way.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if m, _ := filepath.Glob(filepath.Join(cache, "sources", "tmp", ".unpack-*", "tree", "zeros-0")); len(m) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the unpacking never started:\n%s", log.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	code, took := waitExit(t, cmd, 30*time.Second)
	if code != 143 || took > 3*time.Second {
		t.Errorf("exit %d after %s, want 143 within 2 s\n%s", code, took, log.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("--output %s exists: %v", out, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "stages")); !os.IsNotExist(err) {
		t.Errorf("a stage ran: %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "sources", "tmp", ".unpack-*")); len(m) > 0 {
		t.Errorf("unpacking directories left: %q", m)
	}
	t.Logf("ended %s after SIGTERM", took.Round(time.Millisecond))
}
