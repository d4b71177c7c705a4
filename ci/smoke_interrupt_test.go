package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 47: an interrupted smoke run printed every check it had not run as a failure (24
// rows of FAIL "not run: context canceled"). `ci smoke --address` as typed, against a
// loopback server that accepts and never answers, interrupted after a second: the run says
// it was interrupted and how many checks did not run, and no row says FAIL.
func TestAnInterruptedSmokeRunSaysSo(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"smoke", "--address", ln.Addr().String()}, &stdout, &stderr) }()
	var code int
	select {
	case code = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("ci smoke still running 30 s after it was interrupted")
	}
	if code == 0 {
		t.Fatalf("exit 0 for an interrupted run\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	if strings.Contains(stdout.String(), "FAIL") || strings.Contains(stderr.String(), "smoke checks failed") {
		t.Errorf("unrun checks are listed as failures:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	for _, w := range []string{"interrupted", "not run"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
		}
	}
}

// Issue 47: every file a command writes because a person named it is written only when the
// command was not interrupted meanwhile (notInterrupted). `ci dockerfile -o FILE` as typed,
// with its context already cancelled (a SIGTERM while it rendered): no file, an error naming
// it, not exit 0.
func TestAnInterruptedCommandWritesNoOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "Dockerfile")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"dockerfile", "-o", out}, &stdout, &stderr)
	if code == 0 {
		t.Errorf("exit 0 for an interrupted run\nstderr: %s", stderr.String())
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("-o %s was written after the interruption: %v", out, err)
	}
	if w := "interrupted: -o " + out + " was not written"; !strings.Contains(stderr.String(), w) {
		t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
	}
}
