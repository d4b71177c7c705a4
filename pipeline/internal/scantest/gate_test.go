//go:build integration

package scantest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anchore/grype/grype/match"
	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// build.yml's gate step, run by bash on grype's own JSON report of the test image (the
// document anchore/scan-action hands it), fails on the planted fixable critical findings,
// naming each, and lists every finding in the step summary; an override for one CVE, in the
// format of .github/vuln-allow.yaml (grype ignore rules, which scan-action's config applies),
// takes that one out and the other still fails the gate; with both overridden it passes. The
// repository's override file is valid grype ignore rules.
func TestVulnerabilityGate(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("jq is not installed (apt-get install jq; GitHub's runners have it): the gate step cannot run")
	}
	script := gateScript(t)
	sbomPath, db := sbomOfTestImage(t), plantedDB(t)

	_, report := scan(t, sbomPath, db)
	code, out, summary := runGate(t, script, report)
	if code != 1 {
		t.Fatalf("gate exit %d on fixable critical findings, want 1\n%s", code, out)
	}
	for _, want := range []string{"::error::default amd64: fixable critical vulnerability " + opensslVuln + " in openssl 3.5.7 (fixed in 3.5.8)", "::error::default amd64: fixable critical vulnerability " + glibcVuln + " in libc6"} {
		if !strings.Contains(out, want) {
			t.Errorf("gate output lacks %q:\n%s", want, out)
		}
	}
	for _, want := range []string{"| Critical | " + opensslVuln + " | openssl | 3.5.7 | 3.5.8 |", "| Critical | " + glibcVuln + " | libc6 |", ".github/vuln-allow.yaml"} {
		if !strings.Contains(summary, want) {
			t.Errorf("step summary lacks %q:\n%s", want, summary)
		}
	}

	allowOpenSSL := allowRules(t, "ignore:\n  - vulnerability: "+opensslVuln+"\n    package:\n      name: openssl\n    reason: \"test: accepted\"\n")
	_, report = scan(t, sbomPath, db, allowOpenSSL...)
	code, out, _ = runGate(t, script, report)
	if code != 1 || strings.Contains(out, opensslVuln) || !strings.Contains(out, glibcVuln) {
		t.Errorf("with %s overridden: exit %d, want 1 naming only %s:\n%s", opensslVuln, code, glibcVuln, out)
	}
	both := append(allowOpenSSL, allowRules(t, "ignore:\n  - vulnerability: "+glibcVuln+"\n    reason: \"test: accepted\"\n")...)
	_, report = scan(t, sbomPath, db, both...)
	if code, out, _ = runGate(t, script, report); code != 0 {
		t.Errorf("with both overridden: exit %d, want 0:\n%s", code, out)
	}

	repoFile, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), ".github", "vuln-allow.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range allowRules(t, string(repoFile)) {
		if r.Vulnerability == "" || r.Reason == "" {
			t.Errorf(".github/vuln-allow.yaml: rule %+v lacks the CVE or the reason", r)
		}
	}
}

// allowRules reads grype ignore rules in the format of .github/vuln-allow.yaml, strictly (an
// unknown key is an error, as a misspelt rule would silently not apply).
func allowRules(t *testing.T, text string) []match.IgnoreRule {
	t.Helper()
	var cfg struct {
		Ignore []match.IgnoreRule `yaml:"ignore"`
	}
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("not grype ignore rules: %v\n%s", err, text)
	}
	return cfg.Ignore
}

// gateScript is the run: script of the scan job's gate step in build.yml.
func gateScript(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), ".github", "workflows", "build.yml"))
	if err != nil {
		t.Fatal(err)
	}
	w, errs := actionlint.Parse(raw)
	if len(errs) > 0 {
		t.Fatal(errs[0])
	}
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			if r, ok := s.Exec.(*actionlint.ExecRun); ok && s.Name != nil && s.Name.Value == "Gate on fixable critical findings" {
				return r.Run.Value
			}
		}
	}
	t.Fatal("build.yml has no step named \"Gate on fixable critical findings\"")
	return ""
}

// runGate runs script as GitHub runs a run: step (bash -e -o pipefail) with the report and
// returns its exit code, its output and the step summary it wrote.
func runGate(t *testing.T, script string, report []byte) (int, string, string) {
	t.Helper()
	dir := t.TempDir()
	reportPath, summaryPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "summary.md")
	if err := os.WriteFile(reportPath, report, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script)
	cmd.Env = append(os.Environ(), "ARCH=amd64", "VARIANT=default", "REPORT="+reportPath, "GITHUB_STEP_SUMMARY="+summaryPath)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	summary, _ := os.ReadFile(summaryPath)
	return code, string(out), string(summary)
}
