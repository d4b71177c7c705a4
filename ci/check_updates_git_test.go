package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// `ci check-updates --write` on the AWS-LC variant lock moves zlib-ng, AWS-LC and the
// git-pinned nginx to their new releases' commits, verified from the mirror's archives of
// them, and says what it checked: the command's lines, the warnings and the PR body show
// tag, commit and tree, not a tarball and a checksum.
func TestCheckUpdatesWriteGitComponents(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewGitScenario(t)
	s.ServeArchives(t)
	body := filepath.Join(t.TempDir(), "body.md")
	code, out, errs := runCheckUpdatesOn(t, s.Upstream, s.Registry, s.LockFile, nil, "--write", "--pr-body", body)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lock.ZlibNG, lock.AWSLC, lock.Nginx} {
		r, c := s.Repos[name], l.MustComponent(name)
		if c.Version != r.New.Version || c.Git.Tag != r.New.Tag || c.Git.Commit != r.New.Commit || c.Git.Tree != r.New.Tree {
			t.Errorf("%s in the lock = %s %+v; want %+v", name, c.Version, c.Git, r.New)
		}
		line := name + ": " + r.Locked.Version + " -> " + r.New.Version + " (git tag " + r.New.Tag + ", commit " + r.New.Commit + ", tree " + r.New.Tree + " verified; no signature)"
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
		for _, w := range []string{"| commit | `" + r.New.Commit + "`", "| tree | `" + r.New.Tree + "`"} {
			if !strings.Contains(string(b), w) {
				t.Errorf("PR body lacks %q:\n%s", w, b)
			}
		}
	}
	if !strings.Contains(out, "warning: aws_lc 5.6.0 is pinned by git commit") || !strings.Contains(out, "reason was rewritten for the new pin") {
		t.Errorf("output lacks the review warnings:\n%s", out)
	}
	if strings.Contains(string(b), "| sha256 |") || strings.Contains(string(b), "| tarball |") {
		t.Errorf("PR body shows tarball rows for git components:\n%s", b)
	}
}

// A new commit whose files are not the tree GitHub reports is refused with both trees named;
// AWS-LC's and nginx's updates and the base images are still written (exit 3, partial), and
// zlib-ng's entry is byte for byte the one before.
func TestCheckUpdatesWriteGitTreeMismatch(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewGitScenario(t)
	s.ServeArchives(t)
	ng := s.Repos[lock.ZlibNG]
	s.SetCommit(ng, ng.New.Commit, ng.Locked.Tree)
	before, err := os.ReadFile(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCheckUpdatesOn(t, s.Upstream, s.Registry, s.LockFile, nil, "--write")
	if code != exitPartial {
		t.Fatalf("exit %d, want %d (partial); stderr:\n%s\nstdout:\n%s", code, exitPartial, errs, out)
	}
	for _, w := range []string{"zlib_ng 2.2.4: refused", ng.Locked.Tree, ng.New.Tree, "the other updates were written"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	after, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lock.AWSLC, lock.Nginx} {
		if c := after.MustComponent(name); c.Version != s.Repos[name].New.Version {
			t.Errorf("%s = %s, want %s although zlib_ng was refused", name, c.Version, s.Repos[name].New.Version)
		}
	}
	if after.Images.Builder.Digest != s.BuilderDigest {
		t.Errorf("builder image = %+v, want it pinned although zlib_ng was refused", after.Images.Builder)
	}
	written, err := os.ReadFile(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := entry(t, written, lock.ZlibNG), entry(t, before, lock.ZlibNG); !bytes.Equal(got, want) {
		t.Errorf("zlib_ng's entry changed although refused:\n%s\nwant:\n%s", got, want)
	}
}

// entry is the named component's object in the lock file, byte for byte.
func entry(t *testing.T, file []byte, name string) []byte {
	t.Helper()
	var l struct{ Components []json.RawMessage }
	if err := json.Unmarshal(file, &l); err != nil {
		t.Fatal(err)
	}
	for _, c := range l.Components {
		var n struct{ Name string }
		if err := json.Unmarshal(c, &n); err == nil && n.Name == name {
			return c
		}
	}
	t.Fatalf("no component %s in\n%s", name, file)
	return nil
}
