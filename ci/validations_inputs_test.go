package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 35: a bad value for a file flag is a usage error (exit 2) whatever the kind of bad:
// missing, the wrong kind of file, or not what the flag takes (not a key, not a
// certificate, not a lock, not executable), refused before anything is built, pulled or
// contacted, naming the flag or the file. (A named pipe, a directory or a device given for
// a file: TestFileInputsMustBeRegularFiles.)
func TestBadFileFlagsAreUsageErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not what any flag takes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, requests := countingMirror(t)
	reg := strings.TrimPrefix(srv.URL, "http://") + "/nginx"
	fpr := "BA5473A2B0587B07FB27CF2D216094DFD0CB81EF"
	build := func(args ...string) []string {
		return append([]string{"build", "--engine", "host", "--push", "--image", reg, "--mirror", srv.URL, "--cache", t.TempDir()}, args...)
	}
	checkUpdates := func(args ...string) []string {
		return append([]string{"check-updates", "--lock", testLockPath, "--skip-images", "--github-api", srv.URL, "--nginx-org", srv.URL, "--timeout", "5s"}, args...)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"build --sign-key missing", build("--sign-key", missing), []string{"--sign-key", missing, "no such file"}},
		{"build --sign-key not a key", build("--sign-key", garbage), []string{"--sign-key " + garbage + " is not a PEM private key"}},
		{"lock trust --lock missing", []string{"lock", "--lock", missing, "trust", "nginx", fpr}, []string{"loading lock " + missing, "nothing was changed"}},
		{"lock trust --lock not a lock", []string{"lock", "--lock", garbage, "trust", "nginx", fpr}, []string{"loading lock " + garbage, "not JSON"}},
		{"smoke --tls-ca missing", []string{"smoke", "--address", "127.0.0.1:1", "--tls-ca", missing}, []string{"--tls-ca", "no such file"}},
		{"smoke --tls-ca not a certificate", []string{"smoke", "--address", "127.0.0.1:1", "--tls-ca", garbage}, []string{"--tls-ca " + garbage, "no PEM certificate"}},
		{"smoke --conf-d missing", []string{"smoke", "--image", reg, "--conf-d", missing}, []string{"--conf-d " + missing, "no such file"}},
		{"smoke --conf-d a file", []string{"smoke", "--image", reg, "--conf-d", garbage}, []string{"--conf-d " + garbage + " is not a directory"}},
		{"check-updates --keys missing", checkUpdates("--keys", missing), []string{"--keys " + missing, "no such file"}},
		{"check-updates --keys a file", checkUpdates("--keys", garbage), []string{"--keys " + garbage + " is not a directory"}},
		{"bench --nginx missing", []string{"bench", "--nginx", missing}, []string{"--nginx " + missing, "no such file"}},
		{"bench --nginx not executable", []string{"bench", "--nginx", garbage}, []string{"--nginx " + garbage + " is not executable"}},
		{"bench --baseline missing", []string{"bench", "--nginx", "/bin/true", "--baseline", missing}, []string{"--baseline " + missing, "no such file"}},
		{"tune --nginx missing", []string{"tune", "--nginx", missing}, []string{"--nginx " + missing, "no such file"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runWithin(t, 5*time.Second, c.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
}

// Issue 35: --registry-timeout must lie in 1s .. 1h (exit 2, naming the flag and the range);
// the bounds themselves pass build's usage checks.
func TestRegistryTimeoutRange(t *testing.T) {
	for _, v := range []string{"0s", "-1s", "1ns", "999ms", "1h0m1s", "1000h"} {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree"), "--registry-timeout", v}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "--registry-timeout") || !strings.Contains(stderr.String(), "from 1s to 1h") {
			t.Errorf("--registry-timeout %s: exit %d, want 2 naming the flag and 1s to 1h\n%s", v, code, stderr.String())
		}
	}
	for _, v := range []string{"1s", "2m", "1h"} {
		var stderr bytes.Buffer
		code := checkUsage([]string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree"), "--registry-timeout", v}, &stderr)
		if code != 0 {
			t.Errorf("--registry-timeout %s: exit %d, want it accepted\n%s", v, code, stderr.String())
		}
	}
}
