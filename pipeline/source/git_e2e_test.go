//go:build integration

package source_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

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
