package plan_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// runContainerScript runs stage s's container script with bash here, the record redirected
// into dir, and returns the record ("" when none was written).
func runContainerScript(t *testing.T, s plan.Stage, run string) (string, error) {
	t.Helper()
	dir := t.TempDir()
	rec := filepath.Join(dir, "record")
	script := strings.ReplaceAll(plan.ContainerScript(s), plan.ContainerStageRecord, rec)
	cmd := exec.Command(plan.ContainerShell[0], append(plan.ContainerShell[1:], script)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), plan.StageRunVar+"="+run)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out}
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatalf("the stage succeeded but wrote no record: %v", err)
	}
	return string(b), nil
}

// The record is how the Dagger executor tells a built stage from a cached one: the run it
// names, and the times of the run that built it.
func TestContainerScriptWritesTheStageRecord(t *testing.T) {
	// A stage that changes directory (as the real ones do) and makes a child spend CPU.
	s := plan.Stage{Name: "t", Script: "cd /\nsleep 0.3\nbash -c 'for i in $(seq 1 200000); do :; done'\n"}
	data, err := runContainerScript(t, s, "run-42")
	if err != nil {
		t.Fatal(err)
	}
	r, err := plan.ParseStageRecord(data)
	if err != nil {
		t.Fatal(err)
	}
	if r.Run != "run-42" {
		t.Errorf("run = %q, want run-42 (record %q)", r.Run, data)
	}
	if r.Wall < 300*time.Millisecond || r.Wall > time.Minute {
		t.Errorf("wall = %v, want at least the 0.3 s the stage slept (record %q)", r.Wall, data)
	}
	if r.User+r.Sys <= 0 {
		t.Errorf("user+sys = %v, want the child's CPU time counted (record %q)", r.User+r.Sys, data)
	}
}

func TestFailedStageWritesNoRecord(t *testing.T) {
	if _, err := runContainerScript(t, plan.Stage{Name: "t", Script: "false\n"}, "r"); err == nil {
		t.Fatal("a failing stage script succeeded")
	}
}

func TestParseStageRecordRefusesWhatTheScriptDoesNotWrite(t *testing.T) {
	good := "run r1\nwall 100.5 102.0\n0m0.010s 0m0.020s\n1m2.500s 0m3.000s\n"
	r, err := plan.ParseStageRecord(good)
	if err != nil {
		t.Fatal(err)
	}
	if want := (plan.StageRecord{Run: "r1", Wall: 1500 * time.Millisecond, User: 62510 * time.Millisecond, Sys: 3020 * time.Millisecond}); r != want {
		t.Errorf("parsed %+v, want %+v", r, want)
	}
	if r, err := plan.ParseStageRecord("run\nwall 1 2\n0m0s 0m0s\n0m0s 0m0s\n"); err != nil || r.Run != "" {
		t.Errorf("a record without a run (the Dockerfile's): %+v, %v", r, err)
	}
	for _, bad := range []string{
		"",
		"run r1\nwall 100 99\n0m0s 0m0s\n0m0s 0m0s\n", // ends before it starts
		"run r1\nwall x y\n0m0s 0m0s\n0m0s 0m0s\n",
		"run r1\nwall 1 2\n0m0s\n0m0s 0m0s\n",
		"run r1\nwall 1 2\n0m0s 0m0s\n",
		"id r1\nwall 1 2\n0m0s 0m0s\n0m0s 0m0s\n",
		"run r1\nwall 1 2\n0m0s 0m0s\n1.5s 0m0s\n",
	} {
		if _, err := plan.ParseStageRecord(bad); err == nil {
			t.Errorf("ParseStageRecord(%q) accepted it", bad)
		}
	}
}
