package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 29, class "one input, several verdicts": each command gives the same verdict on the
// same bad value, as a usage error (exit 2) before anything is fetched.
func TestOneVerdictPerInput(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		// build used to drop the empty entries and build the default set; dockerfile refused.
		{"build --modules ,,,", []string{"build", "--engine", "host", "--modules", ",,,", "--no-smoke"}, "empty entry"},
		{"dockerfile --modules ,,,", []string{"dockerfile", "--modules", ",,,"}, "empty entry"},
		{"build --modules +mail,,", []string{"build", "--engine", "host", "--modules", "+mail,,", "--no-smoke"}, "empty entry"},
		// tags used to drop the sha- tag of a revision it could not use, and print the rest.
		{"tags --revision short", []string{"tags", "--revision", "abc"}, "--revision"},
		{"tags --revision not hex", []string{"tags", "--ref", "refs/heads/main", "--revision", strings.Repeat("z", 40)}, "40 hex digits"},
		{"tags --revision 12 digits", []string{"tags", "--revision", "0123456789ab"}, "full commit"},
		{"manifest --revision", []string{"manifest", "--image", "127.0.0.1:1/x", "--revision", "HEAD", "--dry-run", "sha256:" + strings.Repeat("a", 64)}, "--revision"},
		{"build --revision", []string{"build", "--engine", "host", "--revision", "main", "--no-smoke"}, "--revision"},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, requests := countingMirror(t)
			args := append(c.args, "--lock", testLockPath)
			if c.args[0] == "build" {
				args = append(args, "--mirror", srv.URL, "--cache", filepath.Join(t.TempDir(), "cache"))
			}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stderr.String(), c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout is not empty: %s", stdout.String())
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("refused after %s", took)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests reached the mirror", n)
			}
		})
	}
}

// The full forms still work.
func TestTagsTakesAFullRevision(t *testing.T) {
	var stdout, stderr bytes.Buffer
	sha := strings.Repeat("0123456789", 4)
	if code := run(context.Background(), []string{"tags", "--lock", testLockPath, "--revision", sha}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "sha-012345678901") {
		t.Errorf("no sha- tag: %s", stdout.String())
	}
}
