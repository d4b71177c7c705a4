package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// Issue 29, class "writes in the wrong place or at the wrong time": check-updates --write
// keeps the lock's mode and refuses, before anything is fetched or written (exit 2), every
// output path that would write through a link, over the lock or a key, or fail after the
// lock was rewritten.
func TestCheckUpdatesWriteKeepsTheLockMode(t *testing.T) {
	notInActions(t)
	for _, mode := range []os.FileMode{0o644, 0o664, 0o600} {
		s := upstreamtest.NewScenario(t)
		if err := os.Chmod(s.LockFile, mode); err != nil {
			t.Fatal(err)
		}
		if code, _, errs := runCheckUpdates(t, s, "--write"); code != 0 {
			t.Fatalf("exit %d: %s", code, errs)
		}
		fi, err := os.Lstat(s.LockFile)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != mode {
			t.Errorf("the lock's mode %v became %v", mode, fi.Mode())
		}
	}
}

func TestCheckUpdatesWriteRefusesBadOutputPaths(t *testing.T) {
	notInActions(t)
	for _, c := range []struct {
		name string
		// setup returns the extra flags, given the scenario's lock and a scratch directory.
		setup func(t *testing.T, s *upstreamtest.Scenario, dir string) []string
		want  string
	}{
		{"--pr-body is the lock", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--pr-body", s.LockFile}
		}, "is the lock"},
		{"--pr-body is the lock by another name", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--pr-body", filepath.Join(filepath.Dir(s.LockFile), ".", "x", "..", filepath.Base(s.LockFile))}
		}, "is the lock"},
		{"--pr-body is a link to the lock", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--pr-body", symlink(t, s.LockFile, filepath.Join(dir, "body.md"))}
		}, "symbolic link"},
		{"--pr-body is a hard link to the lock", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			body := filepath.Join(dir, "body.md")
			if err := os.Link(s.LockFile, body); err != nil {
				t.Skipf("hard link: %v", err)
			}
			return []string{"--pr-body", body}
		}, "is the lock"},
		{"--pr-body in a linked directory is the lock", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--pr-body", filepath.Join(symlink(t, filepath.Dir(s.LockFile), filepath.Join(dir, "d")), filepath.Base(s.LockFile))}
		}, "is the lock"},
		{"--pr-body is a key file", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			keys := lock.KeysDirBeside(s.LockFile)
			if err := os.MkdirAll(keys, 0o755); err != nil {
				t.Fatal(err)
			}
			key := filepath.Join(keys, s.Pinned.Fingerprint+".asc")
			if err := os.WriteFile(key, s.Pinned.Armored, 0o644); err != nil {
				t.Fatal(err)
			}
			return []string{"--pr-body", key}
		}, "keys directory"},
		{"--pr-body in a missing directory", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--pr-body", filepath.Join(dir, "no", "such", "body.md")}
		}, "does not exist"},
		{"--pr-body is a directory", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--pr-body", dir}
		}, "not a regular file"},
		{"--lock is a symbolic link", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--lock", symlink(t, s.LockFile, filepath.Join(dir, "stack.lock.json"))}
		}, "symbolic link"},
		{"the keys directory is a symbolic link", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			symlink(t, dir, lock.KeysDirBeside(s.LockFile))
			return nil
		}, "symbolic link"},
		{"--keys is a symbolic link", func(t *testing.T, s *upstreamtest.Scenario, dir string) []string {
			return []string{"--keys", symlink(t, t.TempDir(), filepath.Join(dir, "keys"))}
		}, "symbolic link"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			dir := t.TempDir()
			extra := append([]string{"--write"}, c.setup(t, s, dir)...)
			before := s.LockBytes(t)
			code, out, errs := runCheckUpdates(t, s, extra...)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage, nothing written)\nstdout: %s\nstderr: %s", code, out, errs)
			}
			if !strings.Contains(errs, c.want) {
				t.Errorf("stderr lacks %q:\n%s", c.want, errs)
			}
			if fi, err := os.Lstat(s.LockFile); err != nil || !fi.Mode().IsRegular() || !bytes.Equal(before, s.LockBytes(t)) {
				t.Errorf("the lock was changed (%v)", err)
			}
		})
	}
}

// A key file of the keys directory that is a symbolic link (here dangling, to a path
// outside) is neither followed nor replaced: the update that would vendor the key is
// refused, nothing is written, and nothing appears outside the keys directory.
func TestCheckUpdatesNeverWritesAKeyThroughALink(t *testing.T) {
	r := newReplay(t)
	outside := filepath.Join(t.TempDir(), "outside.asc")
	pcre := r.Keys[lock.PCRE2]
	link := symlink(t, outside, filepath.Join(r.keysDir, pcre.Fingerprint+".asc"))
	before, err := os.ReadFile(r.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := r.run(t)
	if code != 1 {
		t.Errorf("exit %d, want 1 (nothing written)\nstdout: %s\nstderr: %s", code, out, errs)
	}
	if !strings.Contains(errs+out, "symbolic link") {
		t.Errorf("the refusal does not say why:\n%s\n%s", out, errs)
	}
	if _, err := os.Lstat(outside); err == nil {
		t.Errorf("a key was written outside the keys directory, at %s", outside)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link %s was replaced (%v)", link, err)
	}
	if after, _ := os.ReadFile(r.LockFile); !bytes.Equal(before, after) {
		t.Error("the lock was rewritten")
	}
	if _, err := os.Stat(r.body); err == nil {
		t.Error("the pull request body was written")
	}
}

func symlink(t *testing.T, target, link string) string {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	return link
}
