package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream/upstreamtest"
)

// runCheckUpdates runs `ci check-updates` against the scenario's loopback upstream and
// registry and returns the exit code and what it printed.
func runCheckUpdates(t *testing.T, s *upstreamtest.Scenario, extra ...string) (int, string, string) {
	t.Helper()
	return runCheckUpdatesOn(t, s.Upstream, s.Registry, s.LockFile, s.Vendored, extra...)
}

// runCheckUpdatesOn runs `ci check-updates` against a loopback upstream and registry,
// trusting vendored (the test keys) as the vendored signer keys.
func runCheckUpdatesOn(t *testing.T, u *upstreamtest.Server, registry, lockFile string, vendored []string, extra ...string) (int, string, string) {
	t.Helper()
	old := testVendoredKeys
	testVendoredKeys = vendored
	t.Cleanup(func() { testVendoredKeys = old })
	var out, errb bytes.Buffer
	args := append([]string{"check-updates",
		"--lock", lockFile,
		"--github-api", u.GitHubAPI(),
		"--nginx-org", u.NginxOrg(),
		"--mirror", u.Mirror(),
		"--registry", registry,
		"--cache", t.TempDir(),
	}, extra...)
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

func notInActions(t *testing.T) {
	for _, k := range []string{"GITHUB_ACTIONS", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_TOKEN"} {
		t.Setenv(k, "")
	}
}

func TestCheckUpdatesPlainText(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	before := s.LockBytes(t)
	code, out, errs := runCheckUpdates(t, s)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	for _, want := range []string{
		"COMPONENT",
		"openssl                                          3.5.7",
		"warning: nginx 1.26 is no longer maintained",
		"updates are available: run with --write",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "::") {
		t.Errorf("workflow commands outside Actions:\n%s", out)
	}
	if !bytes.Equal(before, s.LockBytes(t)) {
		t.Error("the lock changed without --write")
	}
}

func TestCheckUpdatesWrite(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	code, out, errs := runCheckUpdates(t, s, "--write")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	o := l.MustComponent(lock.OpenSSL)
	if o.Version != upstreamtest.NewOpenSSL || o.SHA256 != upstreamtest.SHA256(s.Tarball) {
		t.Errorf("openssl in the lock = %s %s; want %s %s", o.Version, o.SHA256, upstreamtest.NewOpenSSL, upstreamtest.SHA256(s.Tarball))
	}
	if l.Images.Builder.Digest != s.BuilderDigest || l.Images.Runtime.Digest != s.RuntimeDigest {
		t.Errorf("image digests = %+v", l.Images)
	}
	if !strings.Contains(out, "openssl: 3.5.7 -> 3.5.8 (sha256 "+o.SHA256+", signed by "+s.Pinned.Fingerprint+", top directory openssl-3.5.8/)") {
		t.Errorf("output does not report the verified update:\n%s", out)
	}
}

func TestCheckUpdatesWriteRefusesUnverified(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, s *upstreamtest.Scenario)
	}{
		{"tampered tarball", func(t *testing.T, s *upstreamtest.Scenario) { s.Tamper() }},
		{"unpinned signer", func(t *testing.T, s *upstreamtest.Scenario) { s.SignWith(t, upstreamtest.NewKey(t, "Mallory")) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			notInActions(t)
			s := upstreamtest.NewScenario(t)
			tc.break_(t, s)
			before := s.LockBytes(t)
			code, out, errs := runCheckUpdates(t, s, "--write")
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr:\n%s", code, errs)
			}
			if !strings.Contains(errs, "it is unchanged") || !strings.Contains(errs, "openssl 3.5.8") {
				t.Errorf("stderr does not say which release failed and that the lock is unchanged:\n%s", errs)
			}
			if !bytes.Equal(before, s.LockBytes(t)) {
				t.Errorf("the lock changed:\n%s", s.LockBytes(t))
			}
			if strings.Contains(out, "updated ") {
				t.Errorf("stdout claims an update:\n%s", out)
			}
		})
	}
}

func TestCheckUpdatesInActions(t *testing.T) {
	notInActions(t)
	dir := t.TempDir()
	outFile, sumFile := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", outFile)
	t.Setenv("GITHUB_STEP_SUMMARY", sumFile)
	t.Setenv("GITHUB_TOKEN", "ghs_fakeTokenForTheTest0123456789")
	s := upstreamtest.NewScenario(t)
	code, out, errs := runCheckUpdates(t, s, "--write")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, errs)
	}
	outputs, _ := os.ReadFile(outFile)
	for _, want := range []string{
		"changed<<_GitHubActionsFileCommandDelimeter_\ntrue\n",
		"written<<_GitHubActionsFileCommandDelimeter_\ntrue\n",
		"openssl_version<<_GitHubActionsFileCommandDelimeter_\n3.5.8\n",
		"nginx_version<<_GitHubActionsFileCommandDelimeter_\n1.26.3\n",
		"title<<_GitHubActionsFileCommandDelimeter_\nUpdate openssl 3.5.8, builder image digest, runtime image digest\n",
		"| openssl | `3.5.7` | **3.5.8** | 2030-04-08 (LTS) |",
	} {
		if !strings.Contains(string(outputs), want) {
			t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", want, outputs)
		}
	}
	summary, _ := os.ReadFile(sumFile)
	if !strings.Contains(string(summary), "| openssl | `3.5.7` | **3.5.8** | 2030-04-08 (LTS) |") {
		t.Errorf("step summary:\n%s", summary)
	}
	for _, want := range []string{"::add-mask::ghs_fakeTokenForTheTest0123456789", "::group::", "::warning::nginx 1.26 is no longer maintained"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The token's only appearance is the mask command itself.
	if strings.Count(out+errs, "ghs_fakeTokenForTheTest0123456789") != 1 {
		t.Errorf("the token appears outside its mask command:\n%s\n%s", out, errs)
	}
}
