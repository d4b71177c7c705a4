package actions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// update.yml's check-updates job hands each lock whose check succeeded and rewrote it to the
// pull-request job (step "hand"), and says whether the pull request is a security update
// (the job's security output, the "security" label). Run here for real: the step's script
// with bash, in a scratch checkout, for each combination of the two checks' outcomes and
// outputs that decides the label. A lock whose check failed is not in the pull request, so
// its check's security output must not label it: check-updates may have written its outputs
// before failing (a lock that could not be written after its updates were verified).

// handStep returns the check-updates job's step "hand" and the job's security output.
func handStep(t *testing.T, text string) (*actionlint.Step, string) {
	t.Helper()
	w, errs := actionlint.Parse([]byte(text))
	if len(errs) > 0 {
		t.Fatalf("update.yml: %v", errs[0])
	}
	j := w.Jobs["check-updates"]
	if j == nil {
		t.Fatal("update.yml has no job check-updates")
	}
	var sec string
	if o := j.Outputs["security"]; o != nil && o.Value != nil {
		sec = o.Value.Value
	}
	for _, s := range j.Steps {
		if stepID(s) == "hand" {
			return s, sec
		}
	}
	t.Fatal("update.yml's job check-updates has no step with the id hand")
	return nil, ""
}

// lockCheck is what one lock's check-updates step left: its outcome and outputs.
type lockCheck struct{ outcome, written, security string }

// handOutputs runs the hand step with the two checks as given and returns its outputs.
func handOutputs(t *testing.T, script string, stack, awsLC lockCheck) map[string]string {
	t.Helper()
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q", "-b", "main")
	for _, l := range []string{"stack", "aws-lc"} {
		writeFile(t, filepath.Join(dir, "pipeline", "lock", l+".lock.json"), `{"schema":1}`)
	}
	writeFile(t, filepath.Join(dir, "pipeline", "advisory", "advisories.json"), `{"schema":1}`)
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "-q", "-m", "base")
	temp := t.TempDir()
	for _, l := range []string{"stack", "aws-lc"} { // as each check's step leaves it
		writeFile(t, filepath.Join(temp, "update", l, "body.md"), "body\n")
	}
	output := filepath.Join(t.TempDir(), "output")
	writeFile(t, output, "")
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script) // the runner's shell for run:
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUNNER_TEMP="+temp, "GITHUB_OUTPUT="+output,
		"STACK_OUTCOME="+stack.outcome, "STACK_WRITTEN="+stack.written, "STACK_TITLE=Update nginx 1.30.6", "STACK_REFUSED=", "STACK_ADVISORIES=false", "STACK_SECURITY="+stack.security,
		"AWS_LC_OUTCOME="+awsLC.outcome, "AWS_LC_WRITTEN="+awsLC.written, "AWS_LC_TITLE=Update pcre2 10.46", "AWS_LC_REFUSED=", "AWS_LC_ADVISORIES=false", "AWS_LC_SECURITY="+awsLC.security)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the hand step failed: %v\n%s", err, out)
	}
	b, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	o := map[string]string{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("output line %q is not name=value", line)
		}
		o[k] = v
	}
	return o
}

// TestUpdateSecurityLabelFollowsHandedLocks: the pull request is a security update exactly
// when a lock it carries is one.
func TestUpdateSecurityLabelFollowsHandedLocks(t *testing.T) {
	needGitBash(t)
	b, err := os.ReadFile(filepath.Join(workflowDir(), "update.yml"))
	if err != nil {
		t.Fatal(err)
	}
	step, out := handStep(t, string(b))
	if want := "${{ steps.hand.outputs.security }}"; out != want {
		t.Fatalf("the check-updates job's security output is %q, want %q: the hand step decides which locks the pull request carries", out, want)
	}
	script := runOf(step)
	for _, c := range []struct {
		name                 string
		stack, awsLC         lockCheck
		wantWritten, wantSec string
		wantFailed           string
	}{
		{"the default lock's update fixes an advisory", lockCheck{"success", "true", "true"}, lockCheck{"success", "false", "false"}, "true", "true", ""},
		{"the variant's update fixes one", lockCheck{"success", "true", "false"}, lockCheck{"success", "true", "true"}, "true", "true", ""},
		{"ordinary updates", lockCheck{"success", "true", "false"}, lockCheck{"success", "true", "false"}, "true", "false", ""},
		{"the security update's check failed; the other lock's ordinary update goes on", lockCheck{"failure", "true", "true"}, lockCheck{"success", "true", "false"}, "true", "false", "stack.lock.json"},
		{"nothing written", lockCheck{"success", "false", "false"}, lockCheck{"success", "false", "false"}, "false", "false", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := handOutputs(t, script, c.stack, c.awsLC)
			if o["written"] != c.wantWritten || o["security"] != c.wantSec || o["failed"] != c.wantFailed {
				t.Errorf("written %q, security %q, failed %q; want %q, %q, %q (all outputs: %v)", o["written"], o["security"], o["failed"], c.wantWritten, c.wantSec, c.wantFailed, o)
			}
			if c.wantSec == "true" && !strings.Contains(o["title"], "nginx 1.30.6") && !strings.Contains(o["title"], "pcre2 10.46") {
				t.Errorf("title %q", o["title"])
			}
		})
	}
}
