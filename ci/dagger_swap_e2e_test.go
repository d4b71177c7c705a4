//go:build integration

package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// swapAfterCheck is an engine that renames hostile over the prepared archive of component
// (as swapOnCompilerCheck's cc does: a copy beside it, then mv) when its Build is called:
// after forge's engine.Checked hashed every source, before the engine itself reads any. The
// Dagger engine asks nothing of this machine in that window (no compiler check a cc on PATH
// could stand in for), so the swap is made there, through ci's forgeRun seam.
type swapAfterCheck struct {
	engine.Engine
	t         *testing.T
	component string
	hostile   []byte
}

func (s swapAfterCheck) Build(ctx context.Context, p *plan.Plan, sources map[string]string, dir string, steps progress.Sink) ([]engine.Stage, error) {
	src := sources[s.component]
	if src == "" {
		s.t.Errorf("no prepared archive of %s among the sources %v", s.component, sources)
	} else if err := os.WriteFile(src+".swap", s.hostile, 0o644); err != nil {
		s.t.Error(err)
	} else if err := os.Rename(src+".swap", src); err != nil {
		s.t.Error(err)
	}
	return s.Engine.Build(ctx, p, sources, dir, steps)
}

// Issue 47, acceptance, on the Dagger engine: "An archive swapped between the check and the
// stage's read is never compiled." `ci build` (the default --engine dagger) of the test lock,
// with nginx's prepared archive renamed over after the sources were checked and before the
// engine read any: the build fails naming the stage and the file, and nothing ran in the
// engine: the engine uploads each stage's private copy (engine.PrivateSource), made and
// hashed for every stage before the first one is evaluated, so the refusal comes before any
// compile, and the swapped archive's configure (PWNED-TOCTOU) never runs.
func TestDaggerNeverCompilesASwappedArchive(t *testing.T) {
	needDaggerEngine(t)
	mirror := testenv.Mirror(t)
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	nginx := l.MustComponent(lock.Nginx)
	hostile := swapArchive(t, "nginx-"+nginx.Version, "/PWNED")
	forgeRun = func(ctx context.Context, eng engine.Engine, rs *forge.Resolved, opts ...forge.Option) (*forge.Result, error) {
		return forge.Run(ctx, swapAfterCheck{Engine: eng, t: t, component: lock.Nginx, hostile: hostile}, rs, opts...)
	}
	t.Cleanup(func() { forgeRun = forge.Run })
	dir := t.TempDir()
	cache, tree := filepath.Join(dir, "cache"), filepath.Join(dir, "tree")
	start := time.Now()
	code, stdout, stderr := runWithin(t, 10*time.Minute, "build", "--no-smoke", "-v",
		"--lock", testLockPath, "--mirror", mirror, "--cache", cache, "--tree", tree)
	t.Logf("ci build --engine dagger took %s; its last line: %s", time.Since(start).Round(time.Second), lastLine(stderr))
	if code != 1 {
		t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	for _, w := range []string{"stage nginx:", filepath.Join(cache, "sources", "prepared"), "changed after it was checked", "nothing of it was compiled"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stdout+stderr, "PWNED-TOCTOU") {
		t.Errorf("the swapped archive's configure ran:\n%s", stderr)
	}
	if started := regexp.MustCompile(`(?m)^(builder|zlib|pcre2|openssl|brotli|ngx_brotli|zstd|nginx)\b.*: started$`).FindString(stderr); started != "" {
		t.Errorf("a step ran in the engine (%q) before the refusal:\n%s", started, stderr)
	}
	if ents, _ := os.ReadDir(tree); len(ents) > 0 {
		t.Errorf("--tree %s holds %d entries after the refusal", tree, len(ents))
	}
}
