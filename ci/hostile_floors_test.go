package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 47: a hostile GitHub API cost 3.6 GB of memory for one tag list (30 pages of 16.7 MB,
// each kept whole, then the page cap refused). Here a 500 MB paginated tag list for OpenSSL,
// streamed from loopback (30 pages of 16.7 MB, written a tag at a time, never held): the list
// is refused by its byte limit, having read a bounded part of it, and this process's heap
// stays under 300 MB while check-updates runs. Every other list is a 404.
func TestCheckUpdatesRefusesAHugeTagListWithBoundedMemory(t *testing.T) {
	notInActions(t)
	const pages, pageBytes = 30, 16_700_000
	var served atomic.Int64
	var api *httptest.Server
	api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/repos/openssl/openssl/tags" && r.URL.Path != "/repos/openssl/openssl/releases" {
			http.NotFound(w, r)
			return
		}
		page := 1
		fmt.Sscanf(r.URL.Query().Get("page"), "%d", &page)
		if page < pages {
			w.Header().Set("Link", fmt.Sprintf(`<%s%s?per_page=100&page=%d>; rel="next"`, api.URL, r.URL.Path, page+1))
		}
		w.Header().Set("Content-Type", "application/json")
		item := []byte(`{"name":"openssl-3.0.0","tag_name":"openssl-3.0.0","zipball_url":"` + strings.Repeat("x", 200) + `"},`)
		n, _ := w.Write([]byte("["))
		for written := n; written < pageBytes-len(item); written += len(item) {
			k, err := w.Write(item)
			served.Add(int64(k))
			if err != nil {
				return
			}
		}
		w.Write([]byte(`{"name":"openssl-3.0.1","tag_name":"openssl-3.0.1"}]`))
	}))
	defer api.Close()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"check-updates", "--lock", testLockPath, "--skip-images", "--timeout", "60s",
		"--github-api", api.URL, "--nginx-org", api.URL, "--cache", t.TempDir()}, &out, &errb)
	close(done)
	t.Logf("exit %d; %d bytes served; peak heap in use %d MB", code, served.Load(), peak.Load()>>20)
	if code == 0 {
		t.Errorf("exit 0 with a 500 MB tag list\n%s", errb.String())
	}
	if !strings.Contains(errb.String(), "more than the limit of 33554432 bytes on one list") {
		t.Errorf("stderr does not name the limit on a list:\n%s", errb.String())
	}
	if peak.Load() > 300<<20 {
		t.Errorf("peak heap in use %d MB, want under 300 MB", peak.Load()>>20)
	}
	if served.Load() > 3*pageBytes {
		t.Errorf("%d bytes served: the client read far past the limit on a list", served.Load())
	}
}

// trickle is a mirror that answers every file with a 1 MB Content-Length and then one byte a
// second.
func trickle(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte{'x'}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Issue 47: a mirror sending one byte a second kept `ci build` fetching past 4 min 23 s: the
// stall timer restarted on every byte. A download must move 1 KiB in every stall time
// (--source-timeout, here 2s): the build fails within the stall time and a few seconds (a
// trickle is not retried: the next try trickles the same), naming the floor.
func TestBuildFailsATrickleWithinTheStallTime(t *testing.T) {
	mirror := trickle(t)
	start := time.Now()
	code, _, stderr := runWithin(t, 60*time.Second, "build", "--engine", "host", "--no-smoke", "--tree", t.TempDir()+"/tree",
		"--lock", testLockPath, "--cache", t.TempDir(), "--mirror", mirror, "--source-timeout", "2s")
	took := time.Since(start)
	t.Logf("ended after %s", took.Round(time.Millisecond))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, stderr)
	}
	if took > 8*time.Second {
		t.Errorf("took %s with a 2s --source-timeout", took)
	}
	for _, w := range []string{"in 2s, less than the floor of 1024 bytes", "nothing was built"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}

// Issue 47: the fetch of `ci build` has a deadline of its own, as check-updates' run has, and
// a fetch it ends is reported as the deadline (the flag that sets it), never as a refusal of
// an archive or as transient.
func TestBuildFetchEndsAtItsDeadline(t *testing.T) {
	mirror := trickle(t)
	start := time.Now()
	code, _, stderr := runWithin(t, 60*time.Second, "build", "--engine", "host", "--no-smoke", "--tree", t.TempDir()+"/tree",
		"--lock", testLockPath, "--cache", t.TempDir(), "--mirror", mirror, "--source-timeout", "1m", "--fetch-timeout", "2s")
	took := time.Since(start)
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, stderr)
	}
	if took > 8*time.Second {
		t.Errorf("took %s with a 2s --fetch-timeout", took)
	}
	for _, w := range []string{"stopped at the 2s deadline", "--fetch-timeout", "nothing partial was cached"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	for _, w := range []string{"refused", "transient"} {
		if strings.Contains(stderr, w) {
			t.Errorf("stderr says %q of a deadline:\n%s", w, stderr)
		}
	}
	code, _, stderr = runWithin(t, 10*time.Second, "build", "--engine", "host", "--no-smoke", "--tree", t.TempDir()+"/tree", "--fetch-timeout", "0s")
	if code != 2 || !strings.Contains(stderr, "--fetch-timeout 0s: give a duration from 1s to 24h") {
		t.Errorf("--fetch-timeout 0s: exit %d\n%s", code, stderr)
	}
}

// Issue 47: a git server that accepts TCP and never answers TLS held `git fetch` for curl's
// 300 s connect timeout (git 2.39 has no setting for it, and its low-speed limit starts only
// with a transfer). Here the test lock's nginx, pinned by git commit, is fetched from a black
// hole (no --mirror, so git fetches it; the other sources' hosts do not resolve, refused at
// once): the build fails within the 2s stall time and a few seconds, naming the server and
// the flag that sets the bound.
func TestBuildGitBlackHoleEndsAtTheStallTime(t *testing.T) {
	hole := blackHole(t)
	raw, err := os.ReadFile(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	const nginxRepo = "https://github.com/nginx/nginx.git"
	if !bytes.Contains(raw, []byte(nginxRepo)) {
		t.Fatalf("%s no longer pins nginx by git commit from %s", testLockPath, nginxRepo)
	}
	lockFile := filepath.Join(t.TempDir(), "stack.lock.json")
	if err := os.WriteFile(lockFile, bytes.ReplaceAll(raw, []byte(nginxRepo), []byte("https://"+hole+"/nginx/nginx.git")), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, _, stderr := runWithin(t, 90*time.Second, "build", "--engine", "host", "--no-smoke", "--tree", t.TempDir()+"/tree",
		"--lock", lockFile, "--cache", t.TempDir(), "--source-timeout", "2s")
	took := time.Since(start)
	t.Logf("ended after %s", took.Round(time.Millisecond))
	if code != 1 {
		t.Errorf("exit %d, want 1\n%s", code, stderr)
	}
	if took > 10*time.Second {
		t.Errorf("took %s with a 2s --source-timeout", took)
	}
	for _, w := range []string{hole, "--source-timeout", "nothing was built"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
}
