package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingMirror is a --mirror that serves nothing and counts what was asked of it.
func countingMirror(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// A path the build could not write is refused before any download, in well under a second
// (issue 23: it used to be refused after a full build), with exit status 2 and the flag named.
func TestOutputPathsRefusedBeforeAnyDownload(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "full"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "full", "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"output parent missing", []string{"--output", filepath.Join(dir, "no", "such", "nginx.tar")}, []string{"--output", filepath.Join(dir, "no", "such") + " does not exist", "mkdir -p"}},
		{"output parent is a file", []string{"--output", filepath.Join(file, "nginx.tar")}, []string{"--output", file + " is not a directory"}},
		{"output exists", []string{"--output", file}, []string{"--output", "exists"}},
		{"tree parent missing", []string{"--tree", filepath.Join(dir, "no", "tree"), "--no-smoke"}, []string{"--tree", filepath.Join(dir, "no") + " does not exist"}},
		{"tree not empty", []string{"--tree", filepath.Join(dir, "full"), "--no-smoke"}, []string{"--tree", "not empty"}},
		// Issue 35: --tree and --output naming one path (however spelled), or one inside the other.
		{"tree and output one path", []string{"--tree", filepath.Join(dir, "same"), "--output", filepath.Join(dir, "same"), "--no-smoke"}, []string{"--tree", "--output", "name one path"}},
		{"tree and output one path, spelled apart", []string{"--tree", filepath.Join(dir, "same"), "--output", filepath.Join(dir, "no", "..", "same") + "/", "--no-smoke"}, []string{"name one path"}},
		{"output inside tree", []string{"--tree", filepath.Join(dir, "t"), "--output", filepath.Join(dir, "t", "nginx.tar"), "--no-smoke"}, []string{"is inside --tree"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, requests := countingMirror(t)
			cache := filepath.Join(dir, "cache-"+strings.ReplaceAll(c.name, " ", "-"))
			args := append([]string{"build", "--engine", "host", "--lock", testLockPath, "--mirror", srv.URL, "--cache", cache}, c.flags...)
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), args, &stdout, &stderr)
			took := time.Since(start)
			if code != 2 {
				t.Errorf("exit %d, want 2 (usage)\n%s", code, stderr.String())
			}
			for _, w := range c.want {
				if !strings.Contains(stderr.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
				}
			}
			if took > 500*time.Millisecond {
				t.Errorf("refused after %s, want well under a second", took)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests reached the mirror before the refusal", n)
			}
			if _, err := os.Stat(cache); err == nil {
				t.Errorf("the cache %s was created", cache)
			}
		})
	}
}

// A download over the limit names the flag that raises it, not a library option.
func TestDownloadLimitNamesTheFlag(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 2<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(big) }))
	defer srv.Close()
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree"),
		"--lock", testLockPath, "--mirror", srv.URL, "--cache", cache, "--max-source-size", "1"}, &stdout, &stderr)
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{"1048576-byte limit", "--max-source-size"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "WithMaxSize") {
		t.Errorf("stderr names a library option:\n%s", stderr.String())
	}
	stderr.Reset()
	if code := run(context.Background(), []string{"build", "--max-source-size", "-1"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `invalid value "-1" for flag -max-source-size`) {
		t.Errorf("--max-source-size -1: exit %d, %s", code, stderr.String())
	}
}
