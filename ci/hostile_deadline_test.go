package main

import (
	"net"
	"strings"
	"sync"
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
