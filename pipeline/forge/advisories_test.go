package forge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// seedLock is the design card's stack (nginx 1.26.2, OpenSSL 3.3.1): affected by
// CVE-2026-42945, fixed on its nginx track ("stable") in 1.30.1.
func seedLock(t *testing.T) *lock.Lock {
	t.Helper()
	l, err := lock.Load("../lock/seed.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// A push of a stack with a high advisory fixed on its track is refused as a request error
// (exit status 2) before anything is fetched, naming the CVEs and the flag; naming each one
// lets it through to the fetch; naming one that does not apply is refused.
func TestPushRefusedForAFixedHighAdvisory(t *testing.T) {
	w := newWorld(t)
	w.lock = seedLock(t)
	req := w.request(t.TempDir())
	req.Advisories = "" // the reviewed snapshot
	_, err := runBuild(&fakeEngine{j: w.j}, req)
	if err == nil || !errors.As(err, new(*forge.RequestError)) {
		t.Fatalf("err = %v, want a *forge.RequestError", err)
	}
	for _, want := range []string{"CVE-2026-42945", "fixed in 1.30.1", "major", forge.AcceptAdvisoryFlag + " ", "nothing was fetched"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	if w.fetches != 0 {
		t.Errorf("%d requests reached the mirror before the refusal", w.fetches)
	}

	// The refusal's own last line names every ID to acknowledge.
	msg := err.Error()
	ids := strings.Split(msg[strings.LastIndex(msg, forge.AcceptAdvisoryFlag+" ")+len(forge.AcceptAdvisoryFlag)+1:], ",")
	req.AcceptAdvisories = ids
	if _, err := req.Resolve(); err != nil {
		t.Errorf("with %s %v: %v", forge.AcceptAdvisoryFlag, ids, err)
	}
	req.AcceptAdvisories = ids[1:]
	if _, err := req.Resolve(); err == nil || !strings.Contains(err.Error(), ids[0]) {
		t.Errorf("one ID left out (%s) was not refused: %v", ids[0], err)
	}
	req.AcceptAdvisories = append(ids, "CVE-2024-7347") // 1.26.2 is its fix
	if _, err := req.Resolve(); err == nil || !strings.Contains(err.Error(), "CVE-2024-7347: no high or critical advisory") {
		t.Errorf("an acknowledgement of what does not apply was accepted: %v", err)
	}
	// Without --push nothing is refused.
	req.Push, req.Repo, req.AcceptAdvisories = false, "", nil
	if _, err := req.Resolve(); err != nil {
		t.Errorf("a build without --push was refused: %v", err)
	}
}

// Every build reports the advisories first: before the preflight and the fetch.
func TestBuildReportsAdvisoriesBeforeFetching(t *testing.T) {
	w := newWorld(t)
	w.lock = seedLock(t)
	req := w.request(t.TempDir())
	req.Advisories, req.Push, req.Repo = "", false, ""
	var log strings.Builder
	res, _ := runBuild(&fakeEngine{j: w.j}, req, forge.WithProgress(textSink(&log)))
	text := log.String()
	i, j := strings.Index(text, "CVE-2026-42945"), strings.Index(text, "preflight")
	if i < 0 || j < 0 || i > j {
		t.Fatalf("the advisory line is not before the preflight:\n%s", text)
	}
	if !strings.Contains(text, "severity major (reviewed; upstream: medium), fixed in 1.30.1") {
		t.Errorf("severity or fix missing:\n%s", text)
	}
	if res == nil || !strings.Contains(strings.Join(res.Warnings, "\n"), "CVE-2026-42945") {
		t.Errorf("the high advisory is not among the result's warnings (annotations)")
	}
}
