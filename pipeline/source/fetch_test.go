package source_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

func testLock(t *testing.T) *lock.Lock {
	t.Helper()
	l, err := lock.Load(testenv.TrixieLockPath())
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// counter serves a directory and counts requests per path.
type counter struct {
	mu sync.Mutex
	n  map[string]int
	h  http.Handler
}

func (c *counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.n[r.URL.Path]++
	c.mu.Unlock()
	c.h.ServeHTTP(w, r)
}

func (c *counter) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.n {
		n += v
	}
	return n
}

func (c *counter) count(path string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[path]
}

func serve(t *testing.T, h http.Handler) (string, *counter) {
	t.Helper()
	c := &counter{n: map[string]int{}, h: h}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv.URL, c
}

func fastFetcher(t *testing.T, cache, mirror string, opts ...source.Option) *source.Fetcher {
	return source.New(append([]source.Option{
		source.WithCacheDir(cache),
		source.WithMirror(mirror),
		source.WithSink(testenv.Progress(t)),
		source.WithBackoff(time.Millisecond),
	}, opts...)...)
}

func TestNotFoundIsNotRetried(t *testing.T) {
	l := testLock(t)
	url, c := serve(t, http.NotFoundHandler())
	cache := t.TempDir()
	_, err := fastFetcher(t, cache, url, source.WithRetries(3)).Fetch(context.Background(), l.MustComponent(lock.Zlib))
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("err = %v, want a 404", err)
	}
	if n := c.total(); n != 1 {
		t.Errorf("%d requests for a 404, want 1", n)
	}
}

func TestBadComponentRefused(t *testing.T) {
	l := testLock(t)
	c := l.MustComponent(lock.Nginx)
	c.URL = "https://nginx.org/download/.."
	_, err := source.New(source.WithCacheDir(t.TempDir())).Fetch(context.Background(), c)
	if err == nil || !strings.Contains(err.Error(), "file name") {
		t.Errorf("err = %v, want a refusal of the file name", err)
	}
}

// The OpenSSL release key that signed openssl-3.5.7.tar.gz.asc on 2026-06-09 and expired on
// 2026-09-08 (Debian's debian/upstream/signing-key.asc).
const opensslKey = "BA5473A2B0587B07FB27CF2D216094DFD0CB81EF"

// TestPreparedArchiveIsKeptNotReplaced: a second fetch of the same source keeps the prepared
// archive already in the cache (the same file, not a new one renamed over it: a build beside
// it may be uploading that file to its engine), and replaces one whose bytes no longer hash
// to its name.
func TestPreparedArchiveIsKeptNotReplaced(t *testing.T) {
	tb := upstreamtest.Tarball(t, "zlib-1.3.1", map[string]string{"README": "zlib (a test stand-in)\n"})
	c := lock.Component{Name: lock.Zlib, Version: "1.3.1", URL: "https://example.org/zlib-1.3.1.tar.gz",
		SHA256: upstreamtest.SHA256(tb), Unsigned: "a test stand-in"}
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(tb) }))
	cache := t.TempDir()
	fetch := func() string {
		v, err := fastFetcher(t, cache, url).Fetch(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return v.Prepared
	}
	first := fetch()
	before, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	second := fetch()
	after, err := os.Stat(second)
	if err != nil {
		t.Fatal(err)
	}
	if first != second || !os.SameFile(before, after) {
		t.Errorf("the second fetch replaced the prepared archive %s (was %s)", second, first)
	}
	if err := os.Chmod(first, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(first, []byte("not the archive"), 0o644); err != nil {
		t.Fatal(err)
	}
	third := fetch()
	if b, err := os.ReadFile(third); err != nil || bytes.Equal(b, []byte("not the archive")) {
		t.Errorf("a prepared archive that no longer hashes to its name was kept (%v)", err)
	}
}
