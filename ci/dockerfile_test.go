package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDockerfileCommandMatchesCommitted: `go run ./ci dockerfile -o FILE` with the defaults
// writes exactly the committed dockerfiles/Dockerfile (the regeneration command the golden
// test names really regenerates it).
func TestDockerfileCommandMatchesCommitted(t *testing.T) {
	out := filepath.Join(t.TempDir(), "Dockerfile")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"dockerfile", "-o", out}, &stdout, &stderr); code != 0 {
		t.Fatalf("ci dockerfile exited %d: %s", code, stderr.String())
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "dockerfiles", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("ci dockerfile's output differs from dockerfiles/Dockerfile: run `go run ./ci dockerfile -o dockerfiles/Dockerfile`")
	}
}

func TestDockerfileCommandBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"dockerfile", "--cpu", "pentium4"},
		{"dockerfile", "--platform", "linux/s390x"},
		{"dockerfile", "extra"},
		{"dockerfile", "--mirror", "ftp://mirror.example/src"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
			t.Errorf("%q exited %d, want 2 (usage); stderr: %s", args, code, stderr.String())
		}
		// A flag's own refusal (flag.Value) ends with the command's help line, the others start with "ci dockerfile:".
		if stdout.Len() != 0 || !strings.Contains(stderr.String(), "ci dockerfile") {
			t.Errorf("%q: want the error on stderr and nothing on stdout; got %q / %q", args, stdout.String(), stderr.String())
		}
	}
}
