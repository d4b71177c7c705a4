package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// dirsOnlyArchive is a .tar.gz of top/ and a few empty directories below it: no file.
func dirsOnlyArchive(t *testing.T, top string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, d := range []string{top + "/", top + "/src/", top + "/src/empty/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Typeflag: tar.TypeDir, Mode: 0o755}); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// Issue 47: a hostile GitHub API that says the new zlib-ng commit's tree is 0000... (git's
// null ID, which names no tree), and a mirror that serves a directories-only archive for it
// (which hashed to 0000...), got `check-updates --write` to pin tree 0000.... The API's
// answer is refused now, naming the null ID; zlib-ng's entry is left as it was and the
// others are written (exit 3).
func TestCheckUpdatesRefusesANullTreeFromTheAPI(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewGitScenario(t)
	s.ServeArchives(t)
	ng := s.Repos[lock.ZlibNG]
	s.SetCommit(ng, ng.New.Commit, lock.NullID)
	s.Upstream.SetFile("zlib-ng-"+ng.New.Version+"-git.tar.gz", dirsOnlyArchive(t, "zlib-ng-"+ng.New.Version))
	before := s.LockBytes(t)
	code, out, errs := runCheckUpdatesOn(t, s.Upstream, s.Registry, s.LockFile, nil, "--write")
	if code != exitPartial {
		t.Fatalf("exit %d, want %d (partial); stderr:\n%s\nstdout:\n%s", code, exitPartial, errs, out)
	}
	for _, w := range []string{"zlib_ng", lock.NullID, "git's null ID"} {
		if !strings.Contains(errs, w) {
			t.Errorf("stderr lacks %q:\n%s", w, errs)
		}
	}
	if strings.Contains(string(s.LockBytes(t)), lock.NullID) {
		t.Errorf("the lock pins the null ID:\n%s", s.LockBytes(t))
	}
	if got, want := entry(t, s.LockBytes(t), lock.ZlibNG), entry(t, before, lock.ZlibNG); !bytes.Equal(got, want) {
		t.Errorf("zlib_ng's entry changed:\n%s\nwant:\n%s", got, want)
	}
}

// Issue 47: a lock that pins tree 0000... (or commit 0000...) is refused by every command
// before anything is fetched, naming the field; and a lock that pins git's empty tree gets
// nothing from a directories-only archive: the archive is refused by the unpack policy (no
// source the project builds has no file), naming the rule.
func TestBuildRefusesNullIDsAndFilelessArchives(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewGitScenario(t)
	ng := s.Repos[lock.ZlibNG]
	for _, field := range []string{"commit", "tree"} {
		old := ng.Locked.Tree
		if field == "commit" {
			old = ng.Locked.Commit
		}
		b := bytes.Replace(s.LockBytes(t), []byte(`"`+field+`": "`+old+`"`), []byte(`"`+field+`": "`+lock.NullID+`"`), 1)
		file := filepath.Join(t.TempDir(), "null.lock.json")
		if err := os.WriteFile(file, b, 0o644); err != nil {
			t.Fatal(err)
		}
		var o, e bytes.Buffer
		code := run(t.Context(), []string{"build", "--engine", "host", "--no-smoke", "--lock", file, "--cache", t.TempDir(),
			"--mirror", s.Upstream.Mirror(), "--tree", filepath.Join(t.TempDir(), "tree")}, &o, &e)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2 (a usage error: the lock does not load)\n%s", field, code, e.String())
		}
		for _, w := range []string{".git." + field, "git's null ID"} {
			if !strings.Contains(e.String(), w) {
				t.Errorf("%s: stderr lacks %q:\n%s", field, w, e.String())
			}
		}
		if n := len(s.Upstream.Requests()); n != 0 {
			t.Errorf("%s: %d requests to the upstream before the lock was refused", field, n)
		}
	}
	// The empty tree pinned, the mirror serving an archive without files.
	b := bytes.Replace(s.LockBytes(t), []byte(`"tree": "`+ng.Locked.Tree+`"`), []byte(`"tree": "`+lock.EmptyTree+`"`), 1)
	file := filepath.Join(t.TempDir(), "empty.lock.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	name := "zlib-ng-" + ng.Locked.Version + "-git.tar.gz"
	s.Upstream.SetFile(name, dirsOnlyArchive(t, "zlib-ng-"+ng.Locked.Version))
	cache := t.TempDir()
	var o, e bytes.Buffer
	code := run(t.Context(), []string{"build", "--engine", "host", "--no-smoke", "--lock", file, "--cache", cache,
		"--mirror", s.Upstream.Mirror(), "--tree", filepath.Join(t.TempDir(), "tree")}, &o, &e)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, e.String())
	}
	for _, w := range []string{"archive " + name, "it holds no file", "nothing from it was used or cached"} {
		if !strings.Contains(e.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, e.String())
		}
	}
	noCachedFile(t, cache, name, lock.EmptyTree)
}

// Issue 47: 99,000 empty files 2,000 segments deep with 4,000-byte names (3.4 MB) held
// `ci build` for an estimated 70 CPU-minutes. Here 2,000 such files (the refusal comes at the
// first header; the rest would only make the test slower to build) served by the mirror as
// zlib-ng's archive: the build refuses it in under 10 s, naming the archive and the depth
// rule, and caches nothing of it.
func TestBuildRefusesTheDeepPathArchive(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewGitScenario(t)
	s.ServeArchives(t)
	ng := s.Repos[lock.ZlibNG]
	name := "zlib-ng-" + ng.Locked.Version + "-git.tar.gz"
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	tw := tar.NewWriter(zw)
	dir := "zlib-ng-" + ng.Locked.Version + "/" + strings.Repeat("d/", 1998)
	for i := range 2000 {
		tw.WriteHeader(&tar.Header{Name: dir + strings.Repeat("f", 10) + string(rune('a'+i%26)) + strings.Repeat("0", i%7), Typeflag: tar.TypeReg, Mode: 0o644, Format: tar.FormatPAX})
	}
	tw.Close()
	zw.Close()
	s.Upstream.SetFile(name, buf.Bytes())
	cache := t.TempDir()
	start := time.Now()
	code, _, stderr := runWithin(t, 120*time.Second, "build", "--engine", "host", "--no-smoke", "--lock", s.LockFile, "--cache", cache,
		"--mirror", s.Upstream.Mirror(), "--tree", filepath.Join(t.TempDir(), "tree"))
	took := time.Since(start)
	t.Logf("refused after %s", took.Round(time.Millisecond))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("took %s, want under 10 s", took)
	}
	for _, w := range []string{"archive " + name, "2000 segments deep, over the limit of 128 segments on a name", "nothing from it was used or cached"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	noCachedFile(t, cache, name, ng.Locked.Tree)
}
