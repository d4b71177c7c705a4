package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// notRegularFiles makes, in a fresh directory, one of each file kind no input may be: a
// named pipe nobody writes to, a directory, and a character device (/dev/null, which needs
// no root). Cleanup opens every pipe for writing and closes it, so a reader a regression
// left blocked sees end of file and the test process can end.
func notRegularFiles(t *testing.T) map[string]string {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	t.Cleanup(func() {
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
	})
	sub := filepath.Join(dir, "dir")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"named pipe": fifo, "directory": sub, "character device": os.DevNull}
}

// runWithin runs the command with a deadline: a command that waits on its input fails the
// test instead of hanging it.
func runWithin(t *testing.T, limit time.Duration, args ...string) (int, string, string) {
	t.Helper()
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), args, &stdout, &stderr)
		done <- result{code, stdout.String(), stderr.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.stdout, r.stderr
	case <-time.After(limit):
		t.Fatalf("%q still running after %s", args, limit)
	}
	return 0, "", ""
}

// Issue 29: a FIFO given as --lock blocked (and a SIGTERM did not end it). Every file input
// of every command is refused at once when it is not a regular file, naming the flag and
// the file, as a usage error.
func TestFileInputsMustBeRegularFiles(t *testing.T) {
	kinds := notRegularFiles(t)
	srv, requests := countingMirror(t)
	fpr := "BA5473A2B0587B07FB27CF2D216094DFD0CB81EF"
	for _, c := range []struct {
		name string
		flag string
		args func(file string) []string
	}{
		{"build", "--lock", func(f string) []string {
			return []string{"build", "--engine", "host", "--no-smoke", "--lock", f, "--mirror", srv.URL, "--cache", t.TempDir()}
		}},
		{"check-updates", "--lock", func(f string) []string {
			return []string{"check-updates", "--lock", f, "--skip-images", "--github-api", srv.URL, "--nginx-org", srv.URL, "--timeout", "5s"}
		}},
		{"check-updates --write", "--lock", func(f string) []string {
			return []string{"check-updates", "--write", "--lock", f, "--skip-images", "--github-api", srv.URL, "--nginx-org", srv.URL, "--timeout", "5s"}
		}},
		{"tags", "--lock", func(f string) []string { return []string{"tags", "--lock", f} }},
		{"dockerfile", "--lock", func(f string) []string { return []string{"dockerfile", "--lock", f} }},
		{"modules", "--lock", func(f string) []string { return []string{"modules", "--lock", f} }},
		{"manifest", "--lock", func(f string) []string {
			return []string{"manifest", "--lock", f, "--image", "127.0.0.1:1/x", "--dry-run", "sha256:" + strings.Repeat("a", 64)}
		}},
		{"lock trust", "--lock", func(f string) []string {
			return []string{"lock", "--lock", f, "--mirror", srv.URL, "trust", "nginx", fpr}
		}},
		{"smoke --expect-lock", "--expect-lock", func(f string) []string {
			return []string{"smoke", "--address", "127.0.0.1:1", "--expect-lock", f}
		}},
		{"smoke --tls-ca", "--tls-ca", func(f string) []string {
			return []string{"smoke", "--address", "127.0.0.1:1", "--tls-ca", f}
		}},
	} {
		for kind, file := range kinds {
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				args := c.args(file)
				if c.name == "lock trust" {
					// flags come before the arguments here
					args = []string{"lock", "--lock", file, "--mirror", srv.URL, "trust", "nginx", fpr}
				}
				start := time.Now()
				code, stdout, stderr := runWithin(t, 5*time.Second, args...)
				if code != 2 {
					t.Errorf("exit %d, want 2 (usage)\nstdout: %s\nstderr: %s", code, stdout, stderr)
				}
				for _, w := range []string{"given to " + c.flag + ")", file + " is a", "not a regular file"} {
					if !strings.Contains(stderr, w) {
						t.Errorf("stderr lacks %q:\n%s", w, stderr)
					}
				}
				if took := time.Since(start); took > 3*time.Second {
					t.Errorf("refused after %s, want at once", took)
				}
			})
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
}

// Issue 29, class "one input, several verdicts": a version 01.26.3 loaded in tags and was
// refused by check-updates; an image digest "notadigest", a URL with a space or U+202E and a
// second "sha256" key loaded and reached the Dockerfile. Every command that reads the lock
// gives the one validator's verdict on each: refused, naming the field, before anything is
// fetched, with one exit status: a lock that does not load is a usage error (2) everywhere.
func TestOneVerdictPerLock(t *testing.T) {
	base, err := os.ReadFile(trixieLockPath)
	if err != nil {
		t.Fatal(err)
	}
	const nginxSHA = `"sha256": "69ee2b237744036e61d24b836668aad3040dda461fe6f570f1787eab570c75aa",`
	const nginxURL = `"url": "https://nginx.org/download/nginx-1.26.3.tar.gz",`
	const builderRef = `"ref": "docker.io/library/ubuntu:24.04"`
	srv, requests := countingMirror(t)
	for _, h := range []struct{ name, old, new, field string }{
		{"version 01.26.3", `"version": "1.26.3"`, `"version": "01.26.3"`, "(nginx).version"},
		{"image digest notadigest", builderRef, builderRef + `, "digest": "notadigest"`, "images.builder.digest"},
		{"url with a space", nginxURL, `"url": "https://nginx.org/download/nginx 1.26.3.tar.gz",`, "(nginx).url"},
		{"url with %00", nginxURL, `"url": "https://nginx.org/download/nginx-1.26.3.tar.gz%00.txt",`, "(nginx).url"},
		{"url with U+202E", nginxURL, "\"url\": \"https://nginx.org/download/nginx-1.26.3\u202ezg.rat.tar.gz\",", "(nginx).url"},
		{"a second sha256", nginxSHA, nginxSHA + `"sha256": "` + strings.Repeat("b", 64) + `",`, "sha256"},
		{"image ref with credentials", builderRef, `"ref": "user:s3cret@docker.io/library/ubuntu:24.04"`, "images.builder.ref"},
	} {
		if !bytes.Contains(base, []byte(h.old)) {
			t.Fatalf("%s: the test lock has no %q", h.name, h.old)
		}
		lockFile := filepath.Join(t.TempDir(), "stack.lock.json")
		if err := os.WriteFile(lockFile, bytes.Replace(base, []byte(h.old), []byte(h.new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"tags", "--lock", lockFile},
			{"dockerfile", "--lock", lockFile},
			{"modules", "--lock", lockFile},
			{"check-updates", "--lock", lockFile, "--skip-images", "--github-api", srv.URL, "--nginx-org", srv.URL, "--timeout", "5s"},
			{"check-updates", "--write", "--lock", lockFile, "--skip-images", "--github-api", srv.URL, "--nginx-org", srv.URL, "--mirror", srv.URL, "--cache", t.TempDir(), "--timeout", "5s"},
			{"manifest", "--lock", lockFile, "--image", "127.0.0.1:1/x", "--dry-run", "sha256:" + strings.Repeat("a", 64)},
			{"build", "--engine", "host", "--no-smoke", "--lock", lockFile, "--mirror", srv.URL, "--cache", t.TempDir()},
		} {
			code, stdout, stderr := runWithin(t, 10*time.Second, args...)
			if code != 2 || !strings.Contains(stderr, h.field) || stdout != "" {
				t.Errorf("%s: %s: exit %d, want it refused (exit 2) naming %s, nothing on stdout\nstdout: %s\nstderr: %s", h.name, args[0], code, h.field, stdout, stderr)
			}
			if strings.Contains(stdout+stderr, "s3cret") {
				t.Errorf("%s: %s printed the lock's password:\n%s%s", h.name, args[0], stdout, stderr)
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
}
