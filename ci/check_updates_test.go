package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
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
		// These scenarios are about releases, signatures and keys; their lock's nginx 1.26
		// track has unfixed advisories (exit status 4), which check_updates_security_test.go
		// covers with the reviewed snapshot.
		"--advisories", noAdvisories(t),
		// Nor about the advisory feeds (check_updates_feeds_test.go).
		"--skip-advisory-feeds",
	}, extra...)
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

// noAdvisories is an empty advisories snapshot.
func noAdvisories(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "advisories.json")
	if err := os.WriteFile(p, []byte(`{"schema": 1, "feeds": {}, "advisories": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
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

// A refused release leaves its entry as it was; what else passed (both base images here)
// is written, and the exit status says "partial" (3). Without anything else to write, the
// lock is byte for byte unchanged and the status is 1.
func TestCheckUpdatesWriteRefusesUnverified(t *testing.T) {
	mallory := upstreamtest.NewKey(t, "Mallory") // signs with a key no lock pins
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, s *upstreamtest.Scenario)
		fix    string
	}{
		{"tampered tarball", func(t *testing.T, s *upstreamtest.Scenario) { s.Tamper() }, "check-updates again"},
		{"unpinned signer", func(t *testing.T, s *upstreamtest.Scenario) { s.SignWith(t, mallory) }, "go run ./ci lock trust openssl " + mallory.Fingerprint},
	} {
		t.Run(tc.name+", images move", func(t *testing.T) {
			notInActions(t)
			s := upstreamtest.NewScenario(t)
			tc.break_(t, s)
			body := filepath.Join(t.TempDir(), "body.md")
			code, out, errs := runCheckUpdates(t, s, "--write", "--pr-body", body)
			if code != exitPartial {
				t.Errorf("exit %d, want %d (partial); stderr:\n%s", code, exitPartial, errs)
			}
			l, err := lock.Load(s.LockFile)
			if err != nil {
				t.Fatal(err)
			}
			if o := l.MustComponent(lock.OpenSSL); o.Version != "3.5.7" {
				t.Errorf("openssl moved to %s although refused", o.Version)
			}
			if l.Images.Builder.Digest != s.BuilderDigest || l.Images.Runtime.Digest != s.RuntimeDigest {
				t.Errorf("images = %+v; want both pinned although openssl was refused", l.Images)
			}
			for _, want := range []string{"refused 1", "openssl 3.5.8: refused", "the other updates were written"} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			if !strings.Contains(out, "updated ") || !strings.Contains(out, "builder image: (none) -> "+s.BuilderDigest) {
				t.Errorf("stdout does not list what was written:\n%s", out)
			}
			b, err := os.ReadFile(body)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"### Refused (not in this pull request)", "| openssl | 3.5.8 |", tc.fix} {
				if !strings.Contains(string(b), want) {
					t.Errorf("PR body lacks %q:\n%s", want, b)
				}
			}
		})
		t.Run(tc.name+", nothing else", func(t *testing.T) {
			notInActions(t)
			s := upstreamtest.NewScenario(t)
			tc.break_(t, s)
			before := s.LockBytes(t)
			code, out, errs := runCheckUpdates(t, s, "--write", "--skip-images")
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr:\n%s", code, errs)
			}
			if !strings.Contains(errs, "is unchanged") || !strings.Contains(errs, "openssl 3.5.8") || !strings.Contains(errs, tc.fix) {
				t.Errorf("stderr does not say which release failed, how to resolve it, and that the lock is unchanged:\n%s", errs)
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

// Issue 12, point 3: from the shipped lock (nginx 1.26.2 on track "stable", OpenSSL 3.3.1 on
// track "lts") and the recorded upstream release lists, check-updates --write moves nginx to
// the newest stable branch and OpenSSL to the newest LTS release, each verified (signature by
// a key trusted as vendored, dated after the locked release's, top directory), and
// --pr-body lists it all.
func TestCheckUpdatesDefaultLockMovesToSupportedBranches(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewDefaultLockScenario(t)
	body := filepath.Join(t.TempDir(), "body.md")
	code, out, errs := runCheckUpdatesOn(t, s.Upstream, s.Registry, s.LockFile, s.Vendored, "--write", "--pr-body", body)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct{ version, track string }{
		lock.Nginx:   {"1.28.0", "stable"},
		lock.OpenSSL: {"3.5.4", "lts"},
		lock.PCRE2:   {"10.46", "latest"},
		lock.Zlib:    {"1.3.1", "latest"},
	} {
		c := l.MustComponent(name)
		if c.Version != want.version || c.Track != want.track || c.Signature == nil ||
			strings.Join(c.Signature.Fingerprints, ",") != s.Keys[name].Fingerprint {
			t.Errorf("%s = %+v; want %s on track %q, signed by %s", name, c, want.version, want.track, s.Keys[name].Fingerprint)
		}
		if want.version != "1.3.1" && c.SHA256 != upstreamtest.SHA256(s.Tarballs[c.FileName()]) {
			t.Errorf("%s sha256 %s is not the served tarball's", name, c.SHA256)
		}
	}
	if l.Images.Builder.Digest != s.BuilderDigest || l.Images.Runtime.Digest != s.RuntimeDigest {
		t.Errorf("images = %+v; want the index digests %s and %s", l.Images, s.BuilderDigest, s.RuntimeDigest)
	}
	b, err := os.ReadFile(body)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"### nginx 1.26.2 → 1.28.0", "| top directory | `nginx-1.28.0/` (matches the version) |",
		"| signer | `" + s.Keys[lock.Nginx].Fingerprint + "`, vendored",
		"| signature file | https://nginx.org/download/nginx-1.28.0.tar.gz.asc |",
		"### openssl 3.3.1 → 3.5.4", "| top directory | `openssl-3.5.4/` (matches the version) |",
		"(not older than the locked 3.3.1's, " + upstreamtest.LockedSignedAt.UTC().Format(time.RFC3339) + ")",
		"### pcre2 10.44 → 10.46", "| signature file | https://github.com/PCRE2Project/pcre2/releases/download/pcre2-10.46/pcre2-10.46.tar.gz.sig |",
		"| builder image | `docker.io/library/ubuntu:24.04` | `(none pinned)` → `" + s.BuilderDigest + "` | linux/amd64, linux/arm64/v8 |",
		"| openssl | `3.3.1` | **3.5.4** |",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("PR body lacks %q:\n%s", want, b)
		}
	}
	// The new lock is on supported branches on the day of the recorded answers (1.30 came
	// out on 2026-04-14, after them): nothing left to warn about.
	if w := upstream.BranchWarnings(l, time.Date(2026, 4, 13, 0, 0, 0, 0, time.UTC)); len(w) != 0 {
		t.Errorf("BranchWarnings after the update = %q", w)
	}
}

// --pr-body is only written when the lock was: a refused update leaves neither.
func TestCheckUpdatesPRBodyOnlyWhenWritten(t *testing.T) {
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	s.Tamper()
	body := filepath.Join(t.TempDir(), "body.md")
	if code, _, errs := runCheckUpdates(t, s, "--write", "--skip-images", "--pr-body", body); code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs)
	}
	if _, err := os.Stat(body); !os.IsNotExist(err) {
		t.Errorf("the body was written for a refused update (stat: %v)", err)
	}
	if code, _, errs := runCheckUpdates(t, s, "--pr-body", body); code != 2 || !strings.Contains(errs, "--pr-body needs --write") {
		t.Errorf("--pr-body without --write: exit %d, stderr %s", code, errs)
	}
}
