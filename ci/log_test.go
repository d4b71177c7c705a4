package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// The build's typed events, rendered: the lines a person reads, Detail notes and a passing
// suite's table only with -v, a failing suite's table always, and in GitHub Actions one
// group per top-level step.
func TestLineSinkRendersEvents(t *testing.T) {
	events := []progress.Event{
		progress.StepStarted{Step: "nginx (linux/amd64)"},
		progress.Note{Level: progress.Detail, Text: "downloading nginx"},
		progress.StepDone{Step: "nginx (linux/amd64)", Duration: 1500 * time.Millisecond, Cache: progress.Cached},
		progress.Note{Level: progress.Warning, Text: "openssl is past its end of life"},
		progress.Smoked{Platform: "linux/amd64", Passed: 17, Table: "THE TABLE", OK: true},
		progress.Pushed{Platform: "linux/amd64", Digest: "r@sha256:aa", AlreadyPresent: true},
		progress.Tagged{Digest: "sha256:aa"},
	}
	render := func(verbose, groups bool) string {
		var b strings.Builder
		s, closeGroups := newLog(&b, verbose, groups)
		for _, e := range events {
			s.Send(e)
		}
		closeGroups()
		return b.String()
	}
	quiet := render(false, false)
	for _, want := range []string{"nginx (linux/amd64): started\n", "nginx (linux/amd64): done in 1.5s, from cache\n",
		"warning: openssl is past its end of life\n", "smoke (linux/amd64): 17 passed, 0 failed, 0 skipped\n",
		"push: r@sha256:aa (linux/amd64) already in the registry, smoke-tested\n", "push: tags moved to sha256:aa: none\n"} {
		if !strings.Contains(quiet, want) {
			t.Errorf("output lacks %q:\n%s", want, quiet)
		}
	}
	for _, hidden := range []string{"downloading nginx", "THE TABLE", "::group::"} {
		if strings.Contains(quiet, hidden) {
			t.Errorf("without -v or Actions the output shows %q:\n%s", hidden, quiet)
		}
	}
	if v := render(true, false); !strings.Contains(v, "downloading nginx\n") || !strings.Contains(v, "THE TABLE\n") {
		t.Errorf("-v hides the detail:\n%s", v)
	}
	if g := render(false, true); !strings.Contains(g, "::group::nginx (linux/amd64)\nnginx (linux/amd64): started\n") || strings.Count(g, "::endgroup::") != 1 {
		t.Errorf("Actions groups wrong:\n%s", g)
	}
	var b strings.Builder
	s, _ := newLog(&b, false, false)
	s.Send(progress.Smoked{Platform: "linux/amd64", Failed: 1, Table: "THE TABLE"})
	if !strings.Contains(b.String(), "THE TABLE") || strings.Contains(b.String(), "passed") {
		t.Errorf("a failed suite's table is for everyone, without a pass count:\n%s", b.String())
	}
}
