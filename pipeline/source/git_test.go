package source_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// gitUpstream makes a repository (an executable, a symlink, an export-ignored file) and
// returns its file:// URL, its HEAD commit and tree.
func gitUpstream(t *testing.T) (repo, commit, tree string) {
	t.Helper()
	testenv.Tool(t, "git", "git")
	dir := filepath.Join(t.TempDir(), "zlib-ng")
	os.Mkdir(dir, 0o755)
	run := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	os.WriteFile(filepath.Join(dir, "configure"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("ci export-ignore\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "ci"), []byte("left out of git archive by default\n"), 0o644)
	os.Symlink("configure", filepath.Join(dir, "link"))
	run("init", "-q")
	run("add", "-A")
	run("-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "release")
	return "file://" + dir, run("rev-parse", "HEAD"), run("rev-parse", "HEAD^{tree}")
}

func gitComponent(repo, commit, tree string) lock.Component {
	return lock.Component{Name: lock.ZlibNG, Version: "2.2.2", Unsigned: "test",
		Git: &lock.Git{Repository: repo, Commit: commit, Tree: tree}}
}

// A git source is fetched by commit, archived whole (export-ignore overridden) and verified
// by its tree; the second fetch comes from the cache with the repository gone.
func TestGitSourceFetchedByCommit(t *testing.T) {
	repo, commit, tree := gitUpstream(t)
	cache := t.TempDir()
	f := source.New(source.WithCacheDir(cache), source.WithSink(testenv.Progress(t)))
	c := gitComponent(repo, commit, tree)
	v, err := f.Fetch(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if v.Tree != tree || v.Commit != commit || v.URL != repo || len(v.SHA256) != 64 {
		t.Errorf("verified %+v", v)
	}
	if want := filepath.Join(cache, "git-tree", tree, "zlib-ng-2.2.2-git.tar.gz"); v.Path != want {
		t.Errorf("path %s, want %s", v.Path, want)
	}
	os.RemoveAll(strings.TrimPrefix(repo, "file://"))
	again, err := f.Fetch(context.Background(), c)
	if err != nil {
		t.Fatalf("second fetch (from the cache, repository gone): %v", err)
	}
	if again.URL != "" || again.SHA256 != v.SHA256 {
		t.Errorf("second fetch %+v, want a cache hit with sha256 %s", again, v.SHA256)
	}
}

// A lock whose tree is not the commit's is refused, naming both trees, and nothing is cached.
func TestGitSourceWrongTree(t *testing.T) {
	repo, commit, tree := gitUpstream(t)
	cache := t.TempDir()
	wrong := strings.Repeat("e", 40)
	_, err := source.New(source.WithCacheDir(cache)).Fetch(context.Background(), gitComponent(repo, commit, wrong))
	var te *source.TreeError
	if !errors.As(err, &te) || te.Got != tree || te.Want != wrong {
		t.Fatalf("err = %v, want a TreeError got %s want %s", err, tree, wrong)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache, "git-tree")); len(ents) > 0 {
		t.Errorf("cache holds %s after a refused fetch", ents[0].Name())
	}
}

// Issue 35: `git fetch` of a git-pinned source from a server that accepts and never answers
// waited for more than 75 s. It now fails at the stall timeout, naming the server.
func TestGitFetchFromASilentServerEndsAtTheStallTimeout(t *testing.T) {
	testenv.Tool(t, "git", "git")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c) // accepted, never answered
		}
	}()
	t.Cleanup(func() { ln.Close() })
	repo := "http://" + ln.Addr().String() + "/zlib-ng/zlib-ng.git"
	f := source.New(source.WithCacheDir(t.TempDir()), source.WithStallTimeout(2*time.Second), source.WithRetries(0))
	c := gitComponent(repo, strings.Repeat("a", 40), strings.Repeat("b", 40))
	start := time.Now()
	_, err = f.Fetch(context.Background(), c)
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), ln.Addr().String()) {
		t.Fatalf("err = %v, want one naming %s", err, ln.Addr())
	}
	// The bound is 2 s; the rest is slack for a loaded machine (the fetch waited for ever).
	if took > 20*time.Second {
		t.Errorf("took %s with a 2s stall timeout", took)
	}
	t.Logf("ended after %s: %v", took.Round(time.Millisecond), err)
}
