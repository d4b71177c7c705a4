package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// blackHole is a loopback TCP server that accepts every connection and never answers; the
// connections are closed at the end of the test.
func blackHole(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String()
}

// Issue 29: `ci manifest` (also --dry-run) against a registry that accepts and never answers
// waited forever. Every registry request runs under --timeout; the failure names it.
func TestManifestBlackHoleFailsAtTheDeadline(t *testing.T) {
	hole := blackHole(t)
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, mode := range [][]string{{"--dry-run"}, nil} {
		args := append([]string{"manifest", "--image", hole + "/nginx:test", "--timeout", "2s"}, mode...)
		args = append(args, hole+"/nginx@"+digest)
		start := time.Now()
		code, stdout, stderr := runWithin(t, 30*time.Second, args...)
		took := time.Since(start)
		if code != 1 {
			t.Errorf("%q: exit %d, want 1\nstdout: %s\nstderr: %s", mode, code, stdout, stderr)
		}
		if took > 10*time.Second {
			t.Errorf("%q: took %s with a 2s deadline", mode, took)
		}
		for _, w := range []string{"2s deadline", "--timeout"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("%q: stderr lacks %q:\n%s", mode, w, stderr)
			}
		}
	}
	if code, _, stderr := runWithin(t, 5*time.Second, "manifest", "--image", hole+"/x", "--timeout", "0s", hole+"/x@"+digest); code != 2 || !strings.Contains(stderr, "--timeout") {
		t.Errorf("--timeout 0s: exit %d, %s", code, stderr)
	}
}

// Issue 29: a command waiting on its input did not end at the first SIGTERM. A FIFO input is
// now refused before it is opened (TestFileInputsMustBeRegularFiles); a command waiting on
// the network (a black-hole registry, a GitHub API that never answers) under a long
// --timeout ends at the first SIGTERM, with 143, at once.
func TestFirstSIGTERMEndsAWaitingCommand(t *testing.T) {
	bin := ciBinary(t)
	hole := blackHole(t)
	digest := "sha256:" + strings.Repeat("a", 64)
	for _, c := range []struct {
		name string
		args []string
	}{
		{"manifest --dry-run", []string{"manifest", "--image", hole + "/nginx:test", "--timeout", "5m", "--dry-run", hole + "/nginx@" + digest}},
		{"check-updates", []string{"check-updates", "--lock", testLockPath, "--skip-images", "--timeout", "5m",
			"--github-api", "http://" + hole, "--nginx-org", "http://" + hole}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			cmd.Env = append(os.Environ(), "GITHUB_ACTIONS=", "GITHUB_TOKEN=")
			var out strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cmd.Process.Kill() })
			time.Sleep(time.Second) // connected, and waiting for an answer
			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			code, took := waitExit(t, cmd, 10*time.Second)
			if code != 143 || took > 3*time.Second {
				t.Errorf("exit %d after %s, want 143 at once\n%s", code, took, out.String())
			}
		})
	}
}

// waitExit waits for cmd and returns its exit status, failing after a bound: cleaning up
// takes seconds, not a build's minutes.
func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) (int, time.Duration) {
	t.Helper()
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), time.Since(start)
	case <-time.After(within):
		t.Fatalf("still running %s after the signal", within)
	}
	return 0, 0
}

// Issue 29: `ci build` against a registry that accepts and never answers waited forever (the
// runtime image's pull in the preflight; the push at the end goes through the same registry
// transport, pipeline/image's TestPublishToAStalledRegistryMovesNoTag). A request that moves
// less than 1 KiB in --registry-timeout fails the build, naming the flag, before
// anything is fetched or written.
func TestBuildBlackHoleRegistryFailsAfterTheStallTimeout(t *testing.T) {
	hole := blackHole(t)
	out := filepath.Join(t.TempDir(), "nginx.tar")
	start := time.Now()
	code, stdout, stderr := runWithin(t, 60*time.Second, "build", "--engine", "host", "--no-smoke", "--lock", testLockPath,
		"--cache", t.TempDir(), "--output", out, "--registry-timeout", "2s",
		"--runtime-image", hole+"/distroless/base@sha256:"+strings.Repeat("a", 64))
	took := time.Since(start)
	if code != 1 {
		t.Errorf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if took > 20*time.Second {
		t.Errorf("took %s with a 2s stall timeout", took)
	}
	for _, w := range []string{hole, "less than 1 KiB in 2s", "--registry-timeout", "nothing was built"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--output %s after a failed preflight: %v", out, err)
	}
}

// Issue 40: the end-of-life and superseded-branch warnings came only with --push. Every
// build says them, with the command that fixes them: here a host build of the seed lock
// (nginx 1.26.2, OpenSSL 3.3.1) without --push, which stops at its preflight (a runtime
// image on a registry that never answers) after the warnings.
func TestEveryBuildWarnsAboutUnmaintainedBranches(t *testing.T) {
	hole := blackHole(t)
	code, _, stderr := runWithin(t, 60*time.Second, "build", "--engine", "host", "--no-smoke", "--lock", filepath.Join("..", "pipeline", "lock", "seed.lock.json"),
		"--cache", t.TempDir(), "--output", filepath.Join(t.TempDir(), "nginx.tar"), "--registry-timeout", "1s",
		"--runtime-image", hole+"/distroless/base@sha256:"+strings.Repeat("a", 64))
	if code != 1 {
		t.Errorf("exit %d, want 1 (the black-hole registry)\n%s", code, stderr)
	}
	for _, w := range []string{"warning: nginx 1.26.2 is on the 1.26 branch, superseded by 1.28", "warning: OpenSSL 3.3.1 is on the 3.3 branch, which reached end of life", "check-updates --write"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
