package source_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
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
