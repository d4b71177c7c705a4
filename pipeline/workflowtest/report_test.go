//go:build workflows

package workflowtest

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// failures are the problems each failing test has reported, so that its report is written
// once, at its end.
var failures = struct {
	sync.Mutex
	by map[*testing.T][]string
}{by: map[*testing.T][]string{}}

// fail reports a problem of an act run. At the end of the test, act's whole output is logged
// once, then a digest of it: each failed step with the lines of its job just before it, and
// the test's problems again. A CI log keeps a run's head and tail, and act's output runs to
// thousands of lines: the tail is where the cause must be.
func fail(t *testing.T, r actRun, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	t.Error(msg)
	failures.Lock()
	defer failures.Unlock()
	if _, ok := failures.by[t]; !ok {
		t.Cleanup(func() {
			failures.Lock()
			problems := failures.by[t]
			delete(failures.by, t)
			failures.Unlock()
			t.Logf("act's output:\n%s", r.Log)
			t.Logf("act's failed steps, each with its job's last %d lines before it:\n%s", failedStepContext, failedSteps(r.Log))
			t.Logf("the problems (%d), again:\n%s", len(problems), strings.Join(problems, "\n"))
		})
	}
	failures.by[t] = append(failures.by[t], msg)
}

// Why some scenarios also read step summaries: act v0.2.89's host mode can drop the last
// output of a step that
// fails at once. HostEnvironment.exec returns cmd.Run's error without waiting for the copy
// from the step's pseudo-terminal, then closes it (pkg/container/host_environment.go), so
// an `echo "::error::..."; exit 1` may reach act's log without its echo. The workflows
// therefore write why a gate failed into the step summary as well, which act reads from its
// file after the step and prints ("⚙  Summary - ..."), and the scenarios accept either.

// failedStepContext is how many of its job's lines failedSteps shows before a failed step.
const failedStepContext = 30

// actJobPrefix is the job column act writes before each line of a job's output.
var actJobPrefix = regexp.MustCompile(`^\[[^\]]*\]`)

// failedSteps picks out of act's output each failed step ("❌  Failure - ...") with the
// failedStepContext lines of the same job before it; "none" when no step failed.
func failedSteps(log string) string {
	lines := strings.Split(log, "\n")
	var out []string
	for i, l := range lines {
		if !strings.Contains(l, "❌  Failure - ") {
			continue
		}
		job := actJobPrefix.FindString(l)
		var before []string
		for j := i - 1; j >= 0 && len(before) < failedStepContext; j-- {
			if job != "" && strings.HasPrefix(lines[j], job) {
				before = append(before, lines[j])
			}
		}
		for k := len(before) - 1; k >= 0; k-- {
			out = append(out, before[k])
		}
		out = append(out, l, "")
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "\n")
}

// TestFailedStepsShowsEachFailureWithItsJob: the digest keeps a failed step's own job's
// lines before it, in order, and leaves out the other jobs' lines between them.
func TestFailedStepsShowsEachFailureWithItsJob(t *testing.T) {
	log := strings.Join([]string{
		"[build/test-1  ] ⭐ Run Main go test",
		"[build/scan-1  ] ⭐ Run Main Scan",
		"[build/test-1  ]   | ok  pipeline/lock",
		"[build/scan-1  ]   | 1 critical",
		"[build/test-1  ]   | FAIL pipeline/smoke: the config test",
		"[build/test-1  ]   ❌  Failure - Main go test [2s]",
		"[build/scan-1  ]   ✅  Success - Main Scan [1s]",
	}, "\n")
	got := failedSteps(log)
	want := strings.Join([]string{
		"[build/test-1  ] ⭐ Run Main go test",
		"[build/test-1  ]   | ok  pipeline/lock",
		"[build/test-1  ]   | FAIL pipeline/smoke: the config test",
		"[build/test-1  ]   ❌  Failure - Main go test [2s]",
		"",
	}, "\n")
	if got != want {
		t.Errorf("failedSteps:\n%s\nwant:\n%s", got, want)
	}
	if got := failedSteps("[build/scan-1  ]   ✅  Success - Main Scan [1s]"); got != "none" {
		t.Errorf("failedSteps of a green log = %q, want none", got)
	}
}
