package main

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// stopAtPreflight is the engine ci chose, refusing at its preflight: the build has said
// what it says about its lock (forge's start) and nothing is fetched or built.
type stopAtPreflight struct{ engine.Engine }

var errPreflightStop = errors.New("stopped at the preflight by the test")

func (stopAtPreflight) Preflight(context.Context, bool) error { return errPreflightStop }

// buildToPreflight runs `ci build ARGS` through run(), the command line as typed, with the
// real build pipeline up to the engine's preflight, and returns the exit code and stderr.
func buildToPreflight(t *testing.T, args ...string) (int, string) {
	t.Helper()
	forgeRun = func(ctx context.Context, eng engine.Engine, rs *forge.Resolved, opts ...forge.Option) (*forge.Result, error) {
		return forge.Run(ctx, stopAtPreflight{eng}, rs, opts...)
	}
	t.Cleanup(func() { forgeRun = forge.Run })
	dir := t.TempDir()
	args = append([]string{"build", "--engine", "host", "--cache", filepath.Join(dir, "cache")}, args...)
	var stdout, stderr strings.Builder
	code := run(context.Background(), args, &stdout, &stderr)
	if !strings.Contains(stderr.String(), errPreflightStop.Error()) {
		t.Fatalf("ci build %q did not reach the preflight: exit %d\n%s", args, code, stderr.String())
	}
	return code, stderr.String()
}

// pinnedTestLock writes the test lock with its builder pinned in time, as the shipped locks
// pin theirs.
func pinnedTestLock(t *testing.T) string {
	t.Helper()
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	l.Images.Builder = lock.Default().Images.Builder
	file := filepath.Join(t.TempDir(), "pinned.lock.json")
	if err := l.Write(file); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestPushWithoutTimePinsIsNotReproducibleOverTime: `ci build --push` of a lock whose builder
// is not pinned in time (the test lock) says the build is not reproducible over time, and
// in GitHub Actions as a warning annotation, which the run's summary page lists; a local
// build of the same lock, and a push of a pinned lock, say nothing of it.
func TestPushWithoutTimePinsIsNotReproducibleOverTime(t *testing.T) {
	const said = "not reproducible over time"
	push := []string{"--push", "--image", "127.0.0.1:9/nginx-forge/test"}
	t.Run("in GitHub Actions", func(t *testing.T) {
		noActions(t)
		t.Setenv("GITHUB_ACTIONS", "true")
		t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(t.TempDir(), "summary"))
		_, log := buildToPreflight(t, append([]string{"--lock", testLockPath}, push...)...)
		if !strings.Contains(log, "::warning::"+said) || !strings.Contains(log, "images.builder.digest") || !strings.Contains(log, "images.builder.snapshot") {
			t.Errorf("no warning annotation saying %q and naming the missing fields:\n%s", said, log)
		}
	})
	t.Run("on a terminal", func(t *testing.T) {
		noActions(t)
		_, log := buildToPreflight(t, append([]string{"--lock", testLockPath}, push...)...)
		if !strings.Contains(log, "warning: "+said) {
			t.Errorf("no warning line saying %q:\n%s", said, log)
		}
	})
	t.Run("a local build", func(t *testing.T) {
		noActions(t)
		_, log := buildToPreflight(t, "--lock", testLockPath, "--no-smoke", "--output", filepath.Join(t.TempDir(), "nginx.tar"))
		if strings.Contains(log, said) {
			t.Errorf("a local build warns %q:\n%s", said, log)
		}
	})
	t.Run("a pinned lock", func(t *testing.T) {
		noActions(t)
		t.Setenv("GITHUB_ACTIONS", "true")
		t.Setenv("GITHUB_STEP_SUMMARY", filepath.Join(t.TempDir(), "summary"))
		_, log := buildToPreflight(t, append([]string{"--lock", pinnedTestLock(t)}, push...)...)
		if strings.Contains(log, said) {
			t.Errorf("a push of a lock pinned in time warns %q:\n%s", said, log)
		}
	})
}
