package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// --tls and --zlib through the command's real flag parsing: a choice a lock cannot build is
// refused with exit 2 before anything is fetched (the mirror is never asked), naming the
// flag and the fix; AWS-LC with a too-old nginx names the version needed; tags picks the
// shipped variant lock and its suffix.
func TestLibraryChoiceRefusedBeforeAnyDownload(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"unknown TLS library", []string{"--tls", "boringssl"}, []string{`--tls "boringssl": use one of openssl, aws-lc`}},
		{"lock without AWS-LC", []string{"--tls", "aws-lc", "--lock", testLockPath}, []string{"--tls aws-lc: the lock " + testLockPath + " builds with openssl", "pipeline/lock/aws-lc.lock.json (aws-lc, zlib-ng)"}},
		{"no shipped pair", []string{"--tls", "openssl", "--zlib", "zlib-ng"}, []string{"no shipped lock builds with --tls openssl --zlib zlib-ng", "--lock"}},
		{"AWS-LC with nginx 1.26", []string{"--lock", filepath.Join("testdata", "aws-lc-nginx-1.26.lock.json")}, []string{"nginx 1.26.3 cannot be built with AWS-LC", "from 1.29.2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, requests := countingMirror(t)
			args := append([]string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")),
				"--mirror", srv.URL, "--cache", filepath.Join(dir, "cache")}, c.flags...)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr); code != 2 {
				t.Errorf("exit %d, want 2 (usage)\n%s", code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("the mirror was asked %d times before the refusal", n)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"tags", "--tls", "aws-lc", "--ref", "refs/heads/main"}, &stdout, &stderr); code != 0 {
		t.Fatalf("tags --tls aws-lc: exit %d\n%s", code, stderr.String())
	}
	if got := strings.Split(strings.TrimSpace(stdout.String()), ","); len(got) == 0 || got[0] != "1.30.6-aws-lc-zlib-ng" || got[len(got)-1] != "latest-aws-lc-zlib-ng" {
		t.Errorf("tags --tls aws-lc printed %q", stdout.String())
	}
}

// Issue 35: an explicit --lock is always the lock used. --lock pipeline/lock/stack.lock.json
// with --tls aws-lc (or --zlib zlib-ng) was silently swapped for the shipped variant lock,
// while ./pipeline/lock/stack.lock.json was refused: whether --lock was given decides, not
// its spelling. Run from the checkout's top, where both spellings name the shipped file.
func TestExplicitLockIsNeverSwapped(t *testing.T) {
	t.Chdir(testenv.RepoRoot())
	dir := t.TempDir()
	for _, spelling := range []string{lock.DefaultPath, "./" + lock.DefaultPath} {
		for _, choice := range [][]string{{"--tls", "aws-lc"}, {"--zlib", "zlib-ng"}} {
			want := choice[0] + " " + choice[1] + ": the lock " + spelling + " builds with "
			t.Run(spelling+" "+choice[1], func(t *testing.T) {
				srv, requests := countingMirror(t)
				for _, args := range [][]string{
					append([]string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(dir, "tree"), "--mirror", srv.URL,
						"--cache", filepath.Join(dir, "cache"), "--lock", spelling}, choice...),
					append([]string{"tags", "--ref", "refs/heads/main", "--lock", spelling}, choice...),
					append(append([]string{"manifest", "--image", "127.0.0.1:1/x", "--dry-run", "--lock", spelling}, choice...), "sha256:"+strings.Repeat("a", 64)),
				} {
					var stdout, stderr bytes.Buffer
					if code := run(context.Background(), args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), want) {
						t.Errorf("%s: exit %d, want 2 naming %q\nstdout: %s\nstderr: %s", args[0], code, want, stdout.String(), stderr.String())
					}
				}
				if n := requests.Load(); n != 0 {
					t.Errorf("the mirror was asked %d times", n)
				}
			})
		}
	}
	// Without --lock the choice picks the shipped variant lock, as before.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"tags", "--zlib", "zlib-ng", "--ref", "refs/heads/main"}, &stdout, &stderr); code != 0 || !strings.HasPrefix(stdout.String(), "1.30.6-aws-lc-zlib-ng,") {
		t.Errorf("tags --zlib zlib-ng: exit %d, printed %q\n%s", code, stdout.String(), stderr.String())
	}
}
