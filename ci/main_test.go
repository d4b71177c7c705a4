package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestHelpPrintedOnceToStdout(t *testing.T) {
	for name := range commands {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), []string{name, "--help"}, &stdout, &stderr); code != 0 {
			t.Errorf("%s --help: exit %d", name, code)
		}
		if n := strings.Count(stdout.String(), "Usage: go run ./ci "+name); n != 1 {
			t.Errorf("%s --help printed the usage %d times on stdout", name, n)
		}
		if stderr.Len() != 0 {
			t.Errorf("%s --help wrote to stderr: %q", name, stderr.String())
		}
	}
}

func TestUnknownFlagIsAUsageError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"build", "--bogus"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if !strings.Contains(stderr.String(), "-bogus") || !strings.Contains(stderr.String(), "build --help") {
		t.Errorf("stderr = %q, want the flag named and a pointer to --help", stderr.String())
	}
}
