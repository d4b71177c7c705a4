package main

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A --mirror that redirects in a circle: build names the loop and does not retry it.
func TestBuildNamesAMirrorRedirectLoop(t *testing.T) {
	loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.RequestURI(), http.StatusFound)
	}))
	t.Cleanup(loop.Close)
	start := time.Now()
	code, _, stderr := runWithin(t, 30*time.Second, "build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree"),
		"--lock", testLockPath, "--mirror", loop.URL, "--cache", t.TempDir())
	if code != 1 || !strings.Contains(stderr, "redirect loop: ") || strings.Contains(stderr, "gave up after") {
		t.Errorf("exit %d, want 1 naming the redirect loop, not retried:\n%s", code, stderr)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %s: was the loop retried?", took)
	}
}
