package source_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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
	f := source.New(source.WithCacheDir(cache), source.WithLogf(t.Logf))
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

// From a mirror, the archive is verified by its files' tree: the real archives in
// ../shared/upstream pass; one changed byte in a file is refused and nothing is cached.
func TestGitSourceFromMirror(t *testing.T) {
	l, err := lock.Load(testenv.AWSLCTestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	mirror := testenv.Mirror(t)
	cache := t.TempDir()
	got, err := fastFetcher(t, cache, mirror).FetchAll(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{lock.ZlibNG, lock.AWSLC, lock.Nginx} {
		if v := got[name]; v.Tree != l.MustComponent(name).Git.Tree {
			t.Errorf("%s: %+v", name, v)
		}
	}

	// A tampered copy: zlib-ng's archive with one file's byte changed, recompressed.
	ng := l.MustComponent(lock.ZlibNG)
	bad := tamperedArchive(t, filepath.Join(testenv.MirrorDir(t), ng.FileName()))
	srv, _ := serve(t, http.FileServer(http.Dir(mirrorWith(t, map[string][]byte{ng.FileName(): bad}))))
	cache2 := t.TempDir()
	_, err = fastFetcher(t, cache2, srv).Fetch(context.Background(), ng)
	var te *source.TreeError
	if !errors.As(err, &te) || te.Want != ng.Git.Tree {
		t.Fatalf("tampered archive: err = %v, want a TreeError", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(cache2, "git-tree")); len(ents) > 0 {
		t.Errorf("cache holds %s after a refused fetch", ents[0].Name())
	}
}

func tamperedArchive(t *testing.T, src string) []byte {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", src, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	top, _ := os.ReadDir(dir)
	readme := filepath.Join(dir, top[0].Name(), "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x20
	os.WriteFile(readme, b, 0o644)
	out := filepath.Join(t.TempDir(), "bad.tar.gz")
	if o, err := exec.Command("tar", "-czf", out, "-C", dir, top[0].Name()).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, o)
	}
	bad, _ := os.ReadFile(out)
	return bad
}
