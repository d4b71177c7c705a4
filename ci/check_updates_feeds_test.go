package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// newFeedServer stands in for the two advisory feeds with upstream's recorded answers
// (upstreamtest.AdvisoryFeeds; Nginx and Listing, when set, replace them: hostile feeds).
func newFeedServer(t *testing.T) *upstreamtest.AdvisoryFeeds { return upstreamtest.NewAdvisoryFeeds(t) }

// feedSnapshot writes the reviewed snapshot as the stand-in feeds would leave it, less the
// nginx advisories drop (upstreamtest.FeedSnapshot), to a file, and returns its path and
// bytes: what a refresh starts from.
func feedSnapshot(t *testing.T, drop ...string) (string, []byte) {
	t.Helper()
	b := upstreamtest.FeedSnapshot(t, drop...)
	p := filepath.Join(t.TempDir(), "advisories.json")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, b
}

// feedRun runs check-updates in Actions against the DefaultLockScenario (the seed lock,
// nginx 1.26.2) offering nginx 1.30.6, with the feeds and snapshot given, and returns the
// exit status, the step outputs, the pull request body and standard error.
func feedRun(t *testing.T, s *upstreamtest.DefaultLockScenario, snapshot string, args ...string) (int, string, string, string) {
	t.Helper()
	notInActions(t)
	dir := t.TempDir()
	outFile, sumFile, body := filepath.Join(dir, "out"), filepath.Join(dir, "sum"), filepath.Join(dir, "body.md")
	os.WriteFile(outFile, nil, 0o644)
	os.WriteFile(sumFile, nil, 0o644)
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", outFile)
	t.Setenv("GITHUB_STEP_SUMMARY", sumFile)
	old := testVendoredKeys
	testVendoredKeys = s.Vendored
	t.Cleanup(func() { testVendoredKeys = old })
	all := append([]string{"check-updates", "--lock", s.LockFile, "--github-api", s.Upstream.GitHubAPI(),
		"--nginx-org", s.Upstream.NginxOrg(), "--mirror", s.Upstream.Mirror(), "--registry", s.Registry,
		"--cache", t.TempDir(), "--advisories", snapshot}, args...)
	if slices.Contains(args, "--write") {
		all = append(all, "--pr-body", body)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), all, &out, &errb)
	outputs, _ := os.ReadFile(outFile)
	b, _ := os.ReadFile(body)
	return code, string(outputs), string(b), errb.String() + out.String()
}

// offerNginx1306 makes the stand-in upstream offer nginx 1.30.6, the release issue 46 moves
// the shipped lock to.
func offerNginx1306(t *testing.T, s *upstreamtest.DefaultLockScenario) { s.OfferNginx1306(t) }

func output(outputs, name string) string {
	_, v, ok := strings.Cut(outputs, name+"<<_GitHubActionsFileCommandDelimeter_\n")
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, "\n_GitHubActionsFileCommandDelimeter_")
	return v
}

// Issue 46, acceptance: a replay of the scheduled update. The seed lock (nginx 1.26.2)
// against a stand-in upstream offering nginx 1.30.6 and stand-in feeds with upstream's
// recorded answers: check-updates --write writes the lock, refreshes the snapshot (the feed
// lists CVE-2026-60005, which the snapshot lacked), and marks the pull request as a
// security update naming CVE-2026-42945 in the title, body and outputs.
func TestReplayScheduledUpdateWithAdvisoryFeeds(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	offerNginx1306(t, s)
	feeds := newFeedServer(t)
	snap, before := feedSnapshot(t, "CVE-2026-60005")
	code, outputs, body, errs := feedRun(t, s, snap, append([]string{"--write"}, feeds.Flags()...)...)
	if code != 0 && code != exitUnfixed {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	if v := output(outputs, "nginx_version"); v != "1.30.6" {
		t.Errorf("nginx_version %q, want 1.30.6:\n%s", v, outputs)
	}
	if l, err := lock.Load(s.LockFile); err != nil || l.MustComponent(lock.Nginx).Version != "1.30.6" {
		t.Errorf("the lock does not pin nginx 1.30.6 (%v)", err)
	}
	title := output(outputs, "title")
	if _, sec, _ := strings.Cut(title, "(security: "); !strings.Contains(title, "nginx 1.30.6") || !strings.Contains(sec, "CVE-2026-42945") || !strings.Contains(title, "advisories snapshot") {
		t.Errorf("title %q: want nginx 1.30.6, the advisories snapshot and CVE-2026-42945 among the security fixes", title)
	}
	if output(outputs, "security") != "true" || !strings.Contains(output(outputs, "security_advisories"), "CVE-2026-42945") {
		t.Errorf("security outputs:\n%s", outputs)
	}
	if output(outputs, "advisories_written") != "true" || output(outputs, "advisories_changes") != "added:CVE-2026-60005" {
		t.Errorf("advisories outputs: written %q, changes %q", output(outputs, "advisories_written"), output(outputs, "advisories_changes"))
	}
	for _, want := range []string{"## Security update", "[CVE-2026-42945](", "1.26.2 -> 1.30.6", "## Advisories snapshot refreshed", "| added | nginx | [CVE-2026-60005]("} {
		if !strings.Contains(body, want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, body)
		}
	}
	after, _ := os.ReadFile(snap)
	if bytes.Equal(after, before) || !bytes.Contains(after, []byte(`"CVE-2026-60005"`)) {
		t.Error("the snapshot was not refreshed with CVE-2026-60005")
	}
	// What the snapshot already held is kept as it was: the review of CVE-2026-42945, and
	// the recorded OpenSSL records (no change, no new date).
	got, err := advisory.Load(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range got.Advisories {
		if a.ID == "CVE-2026-42945" && a.ReviewedSeverity != "major" {
			t.Errorf("the refresh dropped CVE-2026-42945's review: %+v", a)
		}
	}
	if got.Feeds["openssl"].Checked != "2026-12-07" {
		t.Errorf("the OpenSSL feed's date moved though nothing of it changed: %+v", got.Feeds["openssl"])
	}

	// Without --write nothing is written; the table says the snapshot would change.
	snap2, before2 := feedSnapshot(t, "CVE-2026-60005")
	s2 := upstreamtest.NewDefaultLockScenario(t)
	offerNginx1306(t, s2)
	lockBefore := s2.LockBytes(t)
	code, _, _, errs = feedRun(t, s2, snap2, feeds.Flags()...)
	if after, _ := os.ReadFile(snap2); !bytes.Equal(after, before2) || !bytes.Equal(s2.LockBytes(t), lockBefore) {
		t.Error("without --write, the snapshot or the lock was written")
	}
	if !strings.Contains(errs, "run with --write to refresh it") || !strings.Contains(errs, "1 added") {
		t.Errorf("exit %d; the output does not say the snapshot would change:\n%s", code, errs)
	}
}

// Issue 46, acceptance: a lock already at nginx 1.30.6 (the shipped stack.lock.json's
// versions) proposes nothing: no nginx update, no security update, and with the feeds
// stating what the snapshot holds, no snapshot change either.
func TestReplayLockAtNginx1306ProposesNothing(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	offerNginx1306(t, s)
	feeds := newFeedServer(t)
	snap, _ := feedSnapshot(t, "CVE-2026-60005")
	// A first run moves the lock to 1.30.6 and refreshes the snapshot; the second is the
	// next day's run against the same upstream.
	if code, _, _, errs := feedRun(t, s, snap, append([]string{"--write"}, feeds.Flags()...)...); code != 0 && code != exitUnfixed {
		t.Fatalf("first run: exit %d:\n%s", code, errs)
	}
	if v := mustLoad(t, s.LockFile).MustComponent(lock.Nginx).Version; v != "1.30.6" {
		t.Fatalf("first run left nginx %s", v)
	}
	snapBefore, _ := os.ReadFile(snap)
	lockBefore := s.LockBytes(t)
	code, outputs, _, errs := feedRun(t, s, snap, append([]string{"--write"}, feeds.Flags()...)...)
	if code != 0 && code != exitUnfixed {
		t.Fatalf("exit %d:\n%s", code, errs)
	}
	if output(outputs, "written") != "false" || output(outputs, "title") != "" || output(outputs, "security") != "false" || output(outputs, "advisories_written") != "false" {
		t.Errorf("a lock at nginx 1.30.6 proposed something:\n%s", outputs)
	}
	if after, _ := os.ReadFile(snap); !bytes.Equal(after, snapBefore) || !bytes.Equal(s.LockBytes(t), lockBefore) {
		t.Error("the snapshot or the lock changed")
	}
}

// Issue 46, acceptance, with the shipped default lock itself (pipeline/lock/stack.lock.json:
// nginx 1.30.6, OpenSSL 3.5.9 on track "3.5", PCRE2 10.48) against the upstream offering
// nginx 1.30.6 and the feeds: nothing to propose, nothing unfixed (exit 0), no security
// update, the lock and snapshot untouched. Its base images are not looked up (--skip-images):
// the stand-in registry cannot hold the digests it pins.
func TestReplayShippedLockProposesNothing(t *testing.T) {
	s := upstreamtest.NewDefaultLockScenario(t)
	offerNginx1306(t, s)
	shipped, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "stack.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	s.LockFile = filepath.Join(t.TempDir(), "stack.lock.json")
	if err := os.WriteFile(s.LockFile, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	feeds := newFeedServer(t)
	snap, before := feedSnapshot(t)
	code, outputs, _, errs := feedRun(t, s, snap, append([]string{"--write", "--skip-images"}, feeds.Flags()...)...)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, errs)
	}
	if output(outputs, "written") != "false" || output(outputs, "title") != "" || output(outputs, "security") != "false" || output(outputs, "advisories_written") != "false" {
		t.Errorf("the shipped lock proposed something:\n%s", outputs)
	}
	if after, _ := os.ReadFile(snap); !bytes.Equal(after, before) || !bytes.Equal(s.LockBytes(t), shipped) {
		t.Error("the snapshot or the lock changed")
	}
	if n := len(feeds.Requests()); n == 0 {
		t.Error("the feeds were not read")
	}
}

func mustLoad(t *testing.T, file string) *lock.Lock {
	t.Helper()
	l, err := lock.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Issue 46, acceptance: hostile feeds. Each gets a clear error naming the feed and the fix,
// leaves the snapshot unchanged, and holds back none of the lock's updates (nginx 1.30.6 is
// written): exit status 3, as for a partial update, and the refused output names the
// snapshot so update.yml's refused job turns the run red.
func TestHostileAdvisoryFeeds(t *testing.T) {
	nginxXML, _ := os.ReadFile(filepath.Join(testenv.RepoRoot(), "pipeline", "advisory", "testdata", "nginx-security_advisories-3924a7f8.xml"))
	for _, c := range []struct {
		name           string
		nginx, listing http.HandlerFunc
		want           []string
	}{
		{"malformed", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("<html><body>rate limited"))
		}, nil, []string{"advisory feed nginx", "/nginx.xml", "not well-formed XML"}},
		{"enormous", func(w http.ResponseWriter, r *http.Request) {
			// No Content-Length: the bound holds on the bytes read, streamed.
			chunk := bytes.Repeat([]byte("<!-- x -->"), 4096)
			for i := 0; i < 1000; i++ {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}, nil, []string{"advisory feed nginx", "more than the 1048576-byte limit"}},
		{"slow", nil, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		}, []string{"advisory feed openssl", "/secjson", "3s deadline", "--timeout"}},
		{"range does not parse", func(w http.ResponseWriter, r *http.Request) {
			w.Write(bytes.Replace(nginxXML, []byte(`vulnerable="0.6.27-1.30.0"`), []byte(`vulnerable="0.6.27-1.30.x"`), 1))
		}, nil, []string{"advisory feed nginx", "CVE-2026-42945", `"0.6.27-1.30.x" is not VERSION or VERSION-VERSION`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := upstreamtest.NewDefaultLockScenario(t)
			offerNginx1306(t, s)
			feeds := newFeedServer(t)
			feeds.Nginx, feeds.Listing = c.nginx, c.listing
			snap, before := feedSnapshot(t, "CVE-2026-60005")
			start := time.Now()
			code, outputs, body, errs := feedRun(t, s, snap, append([]string{"--write", "--timeout", "3s"}, feeds.Flags()...)...)
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s with a 3s deadline", took)
			}
			if code != exitPartial {
				t.Errorf("exit %d, want %d (partial):\n%s", code, exitPartial, errs)
			}
			for _, want := range append(c.want, "the advisories snapshot was not refreshed", "to resolve:") {
				if !strings.Contains(errs, want) {
					t.Errorf("the error lacks %q:\n%s", want, errs)
				}
			}
			if after, _ := os.ReadFile(snap); !bytes.Equal(after, before) {
				t.Error("the snapshot changed")
			}
			if v := mustLoad(t, s.LockFile).MustComponent(lock.Nginx).Version; v != "1.30.6" {
				t.Errorf("the lock's nginx update was held back: %s", v)
			}
			if !strings.Contains(output(outputs, "refused"), "advisories snapshot") || output(outputs, "advisories_written") != "false" {
				t.Errorf("outputs do not name the failed refresh:\n%s", outputs)
			}
			if !strings.Contains(body, "## Advisories snapshot not refreshed") {
				t.Errorf("the pull request body does not say the snapshot was not refreshed:\n%s", body)
			}
		})
	}
}
