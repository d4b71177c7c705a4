package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// Issue 46's acceptance, through the command's own flag parsing: `ci build --push` of the
// seed lock (nginx 1.26.2) prints CVE-2026-42945 with its severity and fixed releases and
// exits 2 naming --accept-advisory, and nothing reaches the mirror; naming the CVEs it lists
// gets past the advisory check (to the engine's preflight, which fails here without one).
func TestBuildPushRefusedForAdvisoriesFetchesNothing(t *testing.T) {
	var requests atomic.Int64
	mirror := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer mirror.Close()
	seed := filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "seed.lock.json")
	t.Setenv("PATH", t.TempDir()) // no dagger, docker or podman: the preflight fails fast
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	args := []string{"build", "--lock", seed, "--mirror", mirror.URL, "--push", "--image", "127.0.0.1:9/nginx-forge/nginx"}
	var stderr strings.Builder
	if code := run(context.Background(), args, new(strings.Builder), &stderr); code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, stderr.String())
	}
	for _, want := range []string{"CVE-2026-42945", "severity major", "fixed in 1.30.1", "1.31.0, 1.30.1", "--accept-advisory CVE-"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the mirror", n)
	}
	out := stderr.String()
	ids := strings.TrimSpace(out[strings.LastIndex(out, "--accept-advisory ")+len("--accept-advisory "):])
	stderr.Reset()
	code := run(context.Background(), append(args, "--accept-advisory", ids), new(strings.Builder), &stderr)
	// The build prints each advisory before its preflight, acknowledged ones marked.
	if !strings.Contains(stderr.String(), "advisory: nginx 1.26.2: CVE-2026-42945, severity major") || !strings.Contains(stderr.String(), "(acknowledged: --accept-advisory)") {
		t.Errorf("the advisories were not printed before the preflight:\n%s", stderr.String())
	}
	// The preflight then fails on what this machine lacks (no Dagger engine; with the lab's
	// engine, the runtime image's registry), after the advisory check.
	if strings.Contains(stderr.String(), "refusing to publish") || !strings.Contains(stderr.String(), "preflight: started") {
		t.Errorf("with --accept-advisory %s: exit %d, want past the advisory check to the engine's preflight:\n%s", ids, code, stderr.String())
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests reached the mirror", n)
	}
}
