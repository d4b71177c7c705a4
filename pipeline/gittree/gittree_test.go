package gittree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/unpack"
)

// gitRepo makes a repository whose tree has what tree hashing must get right: an executable,
// a symlink, nested directories, names that sort differently as files and as directories
// ("a.b" sorts before "a/", after "a"), an empty directory (not in git's tree) and CRLF
// line ends (no conversion).
func gitRepo(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		testenv.Tool(t, "git", "git")
	}
	dir := t.TempDir()
	files := map[string]string{
		"README":         "hello\r\n",
		"a.b":            "x",
		"a/c":            "nested",
		"a/d/e":          "deeper",
		"ab":             "y",
		"configure":      "#!/bin/sh\n",
		".gitattributes": "* text=auto eol=lf\nsecret export-ignore\n",
		"secret":         "ignored by git archive unless overridden",
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(dir, "configure"), 0o755)
	os.Symlink("a/c", filepath.Join(dir, "link"))
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	git(t, dir, "init", "-q")
	git(t, dir, "-c", "core.autocrlf=false", "add", "-A")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "x")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// ofArchive is the tree of archive's files as pipeline/unpack writes them: how a git-pinned
// source is checked.
func ofArchive(t *testing.T, archive string) (string, error) {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "tree")
	if _, err := unpack.Extract(context.Background(), archive, dst, unpack.DefaultLimits); err != nil {
		return "", err
	}
	return OfDir(context.Background(), dst)
}

func TestTreeOfArchiveIsGitsTree(t *testing.T) {
	dir := gitRepo(t)
	want := git(t, dir, "rev-parse", "HEAD^{tree}")
	// info/attributes overrides the tree's export-ignore, as the fetcher does.
	os.WriteFile(filepath.Join(dir, ".git", "info", "attributes"), []byte("* -export-ignore -export-subst\n"), 0o644)
	for _, format := range []string{"tar.gz"} {
		out := filepath.Join(t.TempDir(), "a."+format)
		git(t, dir, "archive", "--format="+format, "--prefix=x-1/", "-o", out, "HEAD")
		got, err := ofArchive(t, out)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s: tree %s, git says %s", format, got, want)
		}
	}
	// Without the override git archive leaves "secret" out: another tree, which must show.
	os.Remove(filepath.Join(dir, ".git", "info", "attributes"))
	out := filepath.Join(t.TempDir(), "a.tar.gz")
	git(t, dir, "archive", "--format=tar.gz", "--prefix=x-1/", "-o", out, "HEAD")
	if got, _ := ofArchive(t, out); got == want {
		t.Error("an archive without the export-ignored file hashes to the whole tree")
	}
}

// Issue 47: a directory with no file below it (only empty directories) hashed to 0000...,
// an ID git never gives a tree, so a lock pinning 0000... "verified" a directories-only
// archive. It is git's empty tree, as `git hash-object -t tree /dev/null` says.
func TestNoFilesIsGitsEmptyTree(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "a", "b", "c"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, err := OfDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if got != emptyTree {
		t.Errorf("tree %s, want git's empty tree %s", got, emptyTree)
	}
	if _, err := exec.LookPath("git"); err == nil {
		if want := git(t, dir, "hash-object", "-t", "tree", "/dev/null"); want != emptyTree {
			t.Errorf("git says the empty tree is %s, the constant %s", want, emptyTree)
		}
	}
}
