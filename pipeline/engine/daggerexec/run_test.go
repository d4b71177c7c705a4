//go:build integration

package daggerexec

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// testPlan is the plan of the test lock with its real tarballs from the mirror.
func testPlan(t *testing.T) (*plan.Plan, map[string]string) {
	t.Helper()
	mirror := testenv.MirrorDir(t)
	p, l := lockPlan(t)
	sources := map[string]string{}
	cache := t.TempDir()
	for _, c := range l.Components {
		prepared, err := source.PrepareFile(context.Background(), filepath.Join(mirror, c.FileName()), cache)
		if err != nil {
			t.Fatal(err)
		}
		sources[c.Name] = prepared
	}
	return p, sources
}

// TestRunWithoutEngineFailsFast: `ci build --engine dagger` on a machine without an engine
// gets the clear error within seconds, after the sources were checked.
func TestRunWithoutEngineFailsFast(t *testing.T) {
	p, sources := testPlan(t)
	noEngineEnv(t, t.TempDir())
	start := time.Now()
	err := New().Run(context.Background(), p, sources, filepath.Join(t.TempDir(), "tree"))
	if !errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), "--engine host") {
		t.Fatalf("Run = %v, want ErrNoEngine suggesting --engine host", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("Run took %v to fail", took)
	}
}

// TestRunRefusesBadInputFirst: a tampered tarball, a missing one, or an install tree
// directory that holds files stops Run before any engine is contacted (none exists here, so
// reaching the engine would give ErrNoEngine instead).
func TestRunRefusesBadInputFirst(t *testing.T) {
	p, sources := testPlan(t)
	noEngineEnv(t, t.TempDir())

	tampered := filepath.Join(t.TempDir(), filepath.Base(sources[lock.PCRE2]))
	b, err := os.ReadFile(sources[lock.PCRE2])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 1
	if err := os.WriteFile(tampered, b, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := map[string]string{}
	for k, v := range sources {
		bad[k] = v
	}
	bad[lock.PCRE2] = tampered
	err = New().Run(context.Background(), p, bad, filepath.Join(t.TempDir(), "tree"))
	if err == nil || errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), tampered) {
		t.Errorf("Run with a tampered tarball = %v, want a checksum error naming it", err)
	}

	delete(bad, lock.PCRE2)
	err = New().Run(context.Background(), p, bad, filepath.Join(t.TempDir(), "tree"))
	if err == nil || errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), "no source tarball given for pcre2") {
		t.Errorf("Run without a tarball = %v", err)
	}

	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "keep-me"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	err = New().Run(context.Background(), p, sources, full)
	if err == nil || errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Run into a non-empty directory = %v", err)
	}
}
