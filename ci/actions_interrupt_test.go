package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// Issue 47, item 7: the step outputs and the step summary are written only when the run was
// not interrupted. `ci check-updates` in GitHub Actions as typed, against the stand-in
// upstream, with its context already cancelled (a SIGTERM before it reported): GITHUB_OUTPUT
// and GITHUB_STEP_SUMMARY stay empty, the exit status is not 0, and standard error says the
// run was interrupted and what was not written.
func TestAnInterruptedRunWritesNoStepOutputsOrSummary(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	dir := t.TempDir()
	outFile, sumFile := filepath.Join(dir, "out"), filepath.Join(dir, "sum")
	os.WriteFile(outFile, nil, 0o644)
	os.WriteFile(sumFile, nil, 0o644)
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", outFile)
	t.Setenv("GITHUB_STEP_SUMMARY", sumFile)
	old := testVendoredKeys
	testVendoredKeys = s.Vendored
	t.Cleanup(func() { testVendoredKeys = old })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"check-updates", "--lock", s.LockFile, "--github-api", s.Upstream.GitHubAPI(),
		"--nginx-org", s.Upstream.NginxOrg(), "--mirror", s.Upstream.Mirror(), "--registry", s.Registry,
		"--cache", t.TempDir(), "--advisories", noAdvisories(t), "--skip-advisory-feeds"}, &stdout, &stderr)
	if code == 0 {
		t.Errorf("exit 0 for an interrupted run\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	for _, f := range []string{outFile, sumFile} {
		if b, err := os.ReadFile(f); err != nil || len(b) > 0 {
			t.Errorf("%s was written after the interruption (%v):\n%s", filepath.Base(f), err, b)
		}
	}
	if w := "interrupted: the step summary was not written"; !strings.Contains(stdout.String()+stderr.String(), w) {
		t.Errorf("the output lacks %q:\nstdout: %s\nstderr: %s", w, stdout.String(), stderr.String())
	}
}
