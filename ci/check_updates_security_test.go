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

// With the reviewed snapshot, the scenario's update is classified: a version that stays
// affected by a high advisory with no fixed release on its track (nginx 1.26.3 on track
// "1.26": CVE-2026-42945, CVE-2026-42533) is exit status 4 with a line naming it, and the
// step outputs and pull request body say which CVEs the written updates fix.
func TestCheckUpdatesSecurity(t *testing.T) {
	outputs, _, errs := checkUpdatesSecurity(t, nil, exitUnfixed)
	for _, want := range []string{"nginx 1.26.3 stays affected by CVE-2026-42945", `no fixed release on its track "1.26"`, "CVE-2026-42533"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	// The real snapshot lists no advisory fixed by the scenario's openssl 3.5.8.
	if !strings.Contains(outputs, "security<<_GitHubActionsFileCommandDelimeter_\nfalse") {
		t.Errorf("security output is not false:\n%s", outputs)
	}

	// A test snapshot (not upstream data: an invented ID) with one High OpenSSL advisory
	// that 3.5.8 fixes marks the update as a security update.
	test := []byte(`{"schema": 1, "feeds": {"openssl": {"url": "https://test.invalid/", "checked": "2026-12-07", "source": "test"}},
	"advisories": [{"component": "openssl", "id": "CVE-2099-0001", "severity": "High", "summary": "test advisory", "url": "https://test.invalid/CVE-2099-0001",
	"affected": [{"from": "3.5.0", "before": "3.5.8"}], "fixed": ["3.5.8"], "source": "test"}]}`)
	outputs, body, _ := checkUpdatesSecurity(t, test, 0)
	for _, want := range []string{"security<<_GitHubActionsFileCommandDelimeter_\ntrue", "CVE-2099-0001", "(security: CVE-2099-0001)"} {
		if !strings.Contains(outputs, want) {
			t.Errorf("outputs lack %q:\n%s", want, outputs)
		}
	}
	if !strings.Contains(body, "## Security update") || !strings.Contains(body, "[CVE-2099-0001](https://test.invalid/CVE-2099-0001) | High | 3.5.7 -> 3.5.8") {
		t.Errorf("the pull request body lacks the security section:\n%s", body)
	}
}

// checkUpdatesSecurity runs check-updates --write of the scenario in Actions, with snapshot
// as --advisories (nil: the reviewed one), wants exit status code, and returns the step
// outputs, the pull request body and standard error.
func checkUpdatesSecurity(t *testing.T, snapshot []byte, wantCode int) (string, string, string) {
	t.Helper()
	notInActions(t)
	dir := t.TempDir()
	outFile, sumFile := filepath.Join(dir, "out"), filepath.Join(dir, "sum")
	os.WriteFile(outFile, nil, 0o644)
	os.WriteFile(sumFile, nil, 0o644)
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", outFile)
	t.Setenv("GITHUB_STEP_SUMMARY", sumFile)
	s := upstreamtest.NewScenario(t)
	old := testVendoredKeys
	testVendoredKeys = s.Vendored
	t.Cleanup(func() { testVendoredKeys = old })
	body := filepath.Join(dir, "body.md")
	args := []string{"check-updates", "--write", "--lock", s.LockFile, "--github-api", s.Upstream.GitHubAPI(),
		"--nginx-org", s.Upstream.NginxOrg(), "--mirror", s.Upstream.Mirror(), "--registry", s.Registry, "--cache", t.TempDir(), "--pr-body", body, "--skip-advisory-feeds"}
	if snapshot != nil {
		p := filepath.Join(dir, "advisories.json")
		os.WriteFile(p, snapshot, 0o644)
		args = append(args, "--advisories", p)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, &out, &errb); code != wantCode {
		t.Fatalf("exit %d, want %d:\n%s\n%s", code, wantCode, out.String(), errb.String())
	}
	outputs, _ := os.ReadFile(outFile)
	b, _ := os.ReadFile(body)
	return string(outputs), string(b), errb.String()
}
