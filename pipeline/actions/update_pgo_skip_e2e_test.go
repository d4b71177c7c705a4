//go:build integration

package actions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// update.yml's record-profiles job decides per leg (lock and platform) whether to train: its
// step "need" skips a leg that the repository variable UPDATE_PGO_SKIP_REASON (every leg) or
// UPDATE_PGO_SKIP_LEGS (a JSON object from "lock/arch", a lock or a platform to the reason)
// names, saying why in a notice, and asks for a recording otherwise. Run here for real: the
// step's script with bash and jq (the runner's), in a scratch checkout whose locks record
// no profile. In an integration file as it needs jq, which the fast tier does not have.

// needStepOf returns the record-profiles job's step "need" in the workflow text.
func needStepOf(t *testing.T, text string) *actionlint.Step {
	t.Helper()
	w, errs := actionlint.Parse([]byte(text))
	if len(errs) > 0 {
		t.Fatalf("update.yml: %v", errs[0])
	}
	j := w.Jobs["record-profiles"]
	if j == nil {
		t.Fatal("update.yml has no job record-profiles")
	}
	for _, s := range j.Steps {
		if s.ID != nil && s.ID.Value == "need" {
			return s
		}
	}
	t.Fatal("update.yml's job record-profiles has no step with the id need")
	return nil
}

// legDecision runs the step for one leg and returns the notice it printed and whether it
// asked for a recording, or the step's failure with its output.
func legDecision(t *testing.T, script, lock, arch, skipReason, skipLegs, arm64Runner string) (notice string, record bool, err error, out string) {
	t.Helper()
	dir := t.TempDir()
	for _, l := range []string{"stack", "aws-lc"} {
		writeFile(t, filepath.Join(dir, "pipeline", "lock", l+".lock.json"), `{"schema":1,"components":[]}`)
	}
	output := filepath.Join(t.TempDir(), "output")
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script) // the runner's shell for run:
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "LOCK="+lock, "ARCH="+arch, "FORCE=false", "SKIP_REASON="+skipReason, "SKIP_LEGS="+skipLegs, "ARM64_RUNNER="+arm64Runner,
		"RUNNER_TEMP="+t.TempDir(), "GITHUB_OUTPUT="+output)
	b, err := cmd.CombinedOutput()
	if err != nil {
		return "", false, err, string(b)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if n, ok := strings.CutPrefix(line, "::notice::"); ok {
			notice = n
		}
	}
	o, _ := os.ReadFile(output)
	return notice, strings.Contains(string(o), "record=true\n"), nil, string(b)
}

// noArm64Reason is why an arm64 leg records no profile without ARM64_RUNNER.
const noArm64Reason = "no arm64 runner (the repository variable ARM64_RUNNER is unset): arm64 profiles are trained natively, never under emulation"

// TestRecordProfilesSkipsLegs: each leg is skipped with the most specific reason given for
// it (leg, then lock, then platform; UPDATE_PGO_SKIP_REASON before all), named in the
// notice, and recorded otherwise; a UPDATE_PGO_SKIP_LEGS that is not an object of strings
// fails the leg, naming the variable, instead of recording or skipping silently.
func TestRecordProfilesSkipsLegs(t *testing.T) {
	needGitBash(t)
	testenv.Tool(t, "jq", "jq")
	step := needStepOf(t, readWorkflow(t, "update.yml"))
	env := envOf(step)
	if env["skip_reason"] != "${{ vars.UPDATE_PGO_SKIP_REASON }}" || env["skip_legs"] != "${{ vars.UPDATE_PGO_SKIP_LEGS }}" || env["arm64_runner"] != "${{ vars.ARM64_RUNNER }}" {
		t.Fatalf("the step need does not read SKIP_REASON and SKIP_LEGS from the repository variables: %v", env)
	}
	script := runOf(step)
	legs := []string{"stack/amd64", "stack/arm64", "aws-lc/amd64", "aws-lc/arm64"}
	cases := []struct {
		name, reason, legs string
		want               map[string]string // leg -> reason skipped with ("" recorded)
		noArm64Runner      bool              // ARM64_RUNNER unset (otherwise ubuntu-24.04-arm)
	}{
		{"nothing skipped", "", "", map[string]string{}, false},
		{"every leg", "no engine", "", map[string]string{"stack/amd64": "no engine", "stack/arm64": "no engine", "aws-lc/amd64": "no engine", "aws-lc/arm64": "no engine"}, false},
		{"every leg, before the per-leg reasons", "no engine", `{"arm64":"no arm runner"}`,
			map[string]string{"stack/amd64": "no engine", "stack/arm64": "no engine", "aws-lc/amd64": "no engine", "aws-lc/arm64": "no engine"}, false},
		{"by lock and platform", "", `{"aws-lc":"stand-in sources","arm64":"no arm runner"}`,
			map[string]string{"stack/arm64": "no arm runner", "aws-lc/amd64": "stand-in sources", "aws-lc/arm64": "stand-in sources"}, false},
		{"a leg before its platform", "", `{"stack/arm64":"this one","arm64":"no arm runner"}`,
			map[string]string{"stack/arm64": "this one", "aws-lc/arm64": "no arm runner"}, false},
		{"an empty object", "", `{}`, map[string]string{}, false},
		{"no arm64 runner", "", "", map[string]string{"stack/arm64": noArm64Reason, "aws-lc/arm64": noArm64Reason}, true},
		{"no arm64 runner, a reason given for the leg", "", `{"stack/arm64":"this one"}`, map[string]string{"stack/arm64": "this one", "aws-lc/arm64": noArm64Reason}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, leg := range legs {
				lock, arch, _ := strings.Cut(leg, "/")
				runner := "ubuntu-24.04-arm"
				if c.noArm64Runner {
					runner = ""
				}
				notice, record, err, out := legDecision(t, script, lock, arch, c.reason, c.legs, runner)
				switch why := c.want[leg]; {
				case err != nil:
					t.Errorf("%s: the step failed: %v\n%s", leg, err, out)
				case why == "" && (!record || notice != ""):
					t.Errorf("%s: recorded %v, notice %q; want it recorded\n%s", leg, record, notice, out)
				case why != "" && (record || notice != "PGO profile of "+lock+".lock.json for linux/"+arch+" not recorded: "+why):
					t.Errorf("%s: recorded %v, notice %q; want it skipped for %q\n%s", leg, record, notice, why, out)
				}
			}
		})
	}
	for _, bad := range []string{`["arm64"]`, `{"arm64":true}`, `arm64`, `{"arm64":"a"} {"stack":"b"}`, `{"arm64":"two\nlines"}`} {
		_, record, err, out := legDecision(t, script, "stack", "amd64", "", bad, "ubuntu-24.04-arm")
		if err == nil || record || !strings.Contains(out, "::error::UPDATE_PGO_SKIP_LEGS is not one JSON object") {
			t.Errorf("UPDATE_PGO_SKIP_LEGS %s: failed %v, recorded %v, want the leg failed naming the variable\n%s", bad, err, record, out)
		}
	}
}
