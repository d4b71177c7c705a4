//go:build integration

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// needPGOTest skips a test that trains and builds with PGO unless it is asked for
// (NGINX_FORGE_PGO_TEST=1, which .ci/test sets), and always under -short; cost says why.
func needPGOTest(t *testing.T, cost string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("skipped in -short mode: %s", cost)
	}
	if os.Getenv("NGINX_FORGE_PGO_TEST") != "1" {
		t.Skipf("skipped: set NGINX_FORGE_PGO_TEST=1 to run it (%s; .ci/test sets it)", cost)
	}
}

// TestPGOBuildFromRecordedProfileIsReproducible is the pgo mode's reproducibility, end to
// end with the real stack: `ci pgo-profile --in-repo --write` trains once and records the
// profile in a copy of the test lock, as a file beside it (profiles/<file>, the way the
// repository keeps the default lock's), then two `ci build --output` runs with the default
// --optimize auto, the first on the shared build cache and the second with an empty stage
// cache of its own (every stage compiled again, OpenSSL and nginx with the profile), must
// choose pgo and give one image digest. The first build's stages come from whichever run
// built them first (an earlier run of the tests, where the cache is kept), so the two are
// still independent builds, and the second always compiles everything: the reproducibility
// this proves needs a compile that shares nothing with the first, every run (on a machine
// whose shared cache is cold, both compiles are this run's: the one combination a run
// compiles twice, by design).
// It compiles the stack with LTO at most twice (plus the training, unless the shared build
// cache has it): minutes on 2 cores, so it runs only when asked, NGINX_FORGE_PGO_TEST=1
// (.ci/test sets it), and never under -short.
func TestPGOBuildFromRecordedProfileIsReproducible(t *testing.T) {
	needPGOTest(t, "it trains once and builds the stack with PGO twice, once from an empty cache: minutes on 2 cores")
	mirror := testenv.MirrorDir(t)
	reg := registrytest.Start(t)
	base := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	// The mirror: the upstream files, and the recorded profile once there is one.
	served := t.TempDir()
	entries, err := os.ReadDir(mirror)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(mirror, e.Name()), filepath.Join(served, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(served)))
	defer srv.Close()
	lockFile := lockCopy(t, testLockPath)
	work := filepath.Dir(lockFile)
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Minute)
	defer cancel()

	start := time.Now()
	var stdout, stderr bytes.Buffer
	rec := pgoProfileFlags{
		build: buildFlags{engine: "host", lockFile: lockFile, mirror: srv.URL, platform: mustPlatforms("linux/amd64"), cache: testenv.BuildCacheDir()},
		dir:   filepath.Join(work, "pgo"), inRepo: true, write: true,
	}
	if err := runPGOProfile(ctx, rec, &stdout, &stderr); err != nil {
		t.Fatalf("pgo-profile: %v\n%s", err, stderr.String())
	}
	t.Logf("pgo-profile: %s\n%s", time.Since(start).Round(time.Second), stderr.String())
	l, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Profiles) != 1 || !strings.Contains(stdout.String(), l.Profiles[0].SHA256) {
		t.Fatalf("the lock records %+v; pgo-profile printed %s", l.Profiles, stdout.String())
	}
	p := l.Profiles[0]
	if p.URL != "profiles/"+p.FileName() {
		t.Fatalf("the lock records the profile at %q, want profiles/%s", p.URL, p.FileName())
	}
	if _, err := os.Stat(filepath.Join(work, "profiles", p.FileName())); err != nil {
		t.Fatalf("the profile is not beside the lock: %v", err)
	}

	imageLine := regexp.MustCompile(`(?m)^image: (sha256:[0-9a-f]{64}) `)
	var digests []string
	for i := 0; i < 2; i++ {
		start := time.Now()
		var stdout, stderr bytes.Buffer
		cache := testenv.BuildCacheDir()
		if i == 1 {
			cache = t.TempDir()
		}
		f := buildFlags{engine: "host", lockFile: lockFile, mirror: srv.URL, platform: mustPlatforms("linux/amd64"), cache: cache,
			optimize: "auto", runtimeImage: base.String(), output: filepath.Join(work, "nginx-"+string(rune('a'+i))+".tar"), noSmoke: true}
		if err := runBuild(ctx, f, &stdout, &stderr); err != nil {
			t.Fatalf("pgo build %d: %v\n%s", i+1, err, stderr.String())
		}
		log := stderr.String()
		t.Logf("pgo build %d (cache %s): %s\n%s", i+1, cache, time.Since(start).Round(time.Second), log)
		m := imageLine.FindStringSubmatch(log)
		if m == nil {
			t.Fatalf("pgo build %d printed no image digest", i+1)
		}
		digests = append(digests, m[1])
		if !strings.Contains(log, "pgo-profile (linux/amd64): done") || strings.Contains(log, "pgo-train") || strings.Contains(log, "not reproducible") ||
			!strings.Contains(log, "optimize: pgo (auto: the lock records a PGO profile") {
			t.Errorf("pgo build %d did not build from the recorded profile alone", i+1)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two pgo builds from the same lock and recorded profile: %s and %s", digests[0], digests[1])
	}
}

// lockCopy copies the lock file src into a directory of its own and returns the copy's path:
// `ci pgo-profile --in-repo --write` rewrites the lock and puts the profile beside it, which
// must not touch the repository's test locks.
func lockCopy(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}
