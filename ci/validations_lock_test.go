package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// Issue 35: the lock's git.tag is validated like every other field (no control or
// bidirectional character, no ".."), a pre-release nginx (1.29.2rc1) does not satisfy
// AWS-LC's "1.29.2 or newer", and source_date_epoch must lie in 1980-01-01 .. 2100-01-01.
// Every command that reads the lock refuses each, exit 2, naming the field, before anything
// is fetched.
func TestLockTagsVersionsAndEpochValidated(t *testing.T) {
	base, err := os.ReadFile(testenv.AWSLCTestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	const awsTag, nginxVersion, epoch = `"tag": "v5.5.0"`, `"version": "1.30.4"`, `"source_date_epoch": 1796601600`
	srv, requests := countingMirror(t)
	for _, h := range []struct {
		name, old, new string
		want           []string
	}{
		{"git.tag with ..", awsTag, `"tag": "v5.5.0/../../main"`, []string{"(aws_lc).git.tag", `has ".."`}},
		{"git.tag with U+202E", awsTag, "\"tag\": \"v5.5.0\u202e\"", []string{"(aws_lc).git.tag", "U+202E"}},
		{"git.tag with ESC", awsTag, `"tag": "v5.5.0\u001b[2J"`, []string{"(aws_lc).git.tag", "control character U+001B"}},
		{"git.tag with a leading -", awsTag, `"tag": "--upload-pack=x"`, []string{"(aws_lc).git.tag", "not a tag name git takes"}},
		{"nginx 1.29.2rc1 with AWS-LC", nginxVersion, `"version": "1.29.2rc1"`, []string{"nginx 1.29.2rc1 cannot be built with AWS-LC", "from 1.29.2 (a release candidate comes before its release)"}},
		{"source_date_epoch 1", epoch, `"source_date_epoch": 1`, []string{"source_date_epoch: 1 is 1970-01-01T00:00:01Z, outside 1980-01-01 .. 2100-01-01"}},
		{"source_date_epoch after 2100", epoch, `"source_date_epoch": 4102444801`, []string{"2100-01-01T00:00:01Z, outside"}},
		{"source_date_epoch in milliseconds", epoch, `"source_date_epoch": 1796601600000`, []string{"milliseconds instead of seconds"}},
	} {
		if !bytes.Contains(base, []byte(h.old)) {
			t.Fatalf("%s: the test lock has no %q", h.name, h.old)
		}
		lockFile := filepath.Join(t.TempDir(), "aws-lc.lock.json")
		if err := os.WriteFile(lockFile, bytes.Replace(base, []byte(h.old), []byte(h.new), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"tags", "--lock", lockFile},
			{"dockerfile", "--lock", lockFile},
			{"modules", "--lock", lockFile},
			{"check-updates", "--write", "--lock", lockFile, "--skip-images", "--github-api", srv.URL, "--nginx-org", srv.URL, "--mirror", srv.URL, "--cache", t.TempDir(), "--timeout", "5s"},
			{"build", "--engine", "host", "--no-smoke", "--lock", lockFile, "--mirror", srv.URL, "--cache", t.TempDir()},
		} {
			code, stdout, stderr := runWithin(t, 10*time.Second, args...)
			if code != 2 || stdout != "" {
				t.Errorf("%s: %s: exit %d, want 2 and nothing on stdout\nstdout: %s\nstderr: %s", h.name, args[0], code, stdout, stderr)
			}
			for _, w := range h.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("%s: %s: stderr lacks %q:\n%s", h.name, args[0], w, stderr)
				}
			}
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the loopback server", n)
	}
	// The bounds themselves, and nginx 1.29.2 itself, are accepted.
	for _, repl := range [][2]string{{epoch, `"source_date_epoch": 315532800`}, {epoch, `"source_date_epoch": 4102444800`}, {nginxVersion, `"version": "1.29.2"`}} {
		lockFile := filepath.Join(t.TempDir(), "aws-lc.lock.json")
		if err := os.WriteFile(lockFile, bytes.Replace(base, []byte(repl[0]), []byte(repl[1]), 1), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runWithin(t, 10*time.Second, "tags", "--lock", lockFile); code != 0 {
			t.Errorf("%s: tags exit %d\n%s", repl[1], code, stderr)
		}
	}
}
