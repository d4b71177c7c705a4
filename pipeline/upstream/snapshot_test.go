package upstream_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// checkOn checks the scenario's lock against its loopback upstream and registry with the
// clock stopped at day.
func checkOn(t *testing.T, s *upstreamtest.Scenario, day time.Time) *upstream.Report {
	t.Helper()
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	ch := &upstream.Checker{
		Releases: upstream.NewClient(upstream.WithGitHubAPI(s.Upstream.GitHubAPI()), upstream.WithNginxOrg(s.Upstream.NginxOrg()), upstream.WithRetries(1, time.Millisecond)),
		Images:   upstream.NewImageResolver(upstream.WithRegistry(s.Registry)),
		Now:      func() time.Time { return day },
	}
	rep, err := ch.Check(context.Background(), l)
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	return rep
}

func builderReport(t *testing.T, rep *upstream.Report) upstream.ImageReport {
	t.Helper()
	for _, ir := range rep.Images {
		if ir.Role == "builder" {
			return ir
		}
	}
	t.Fatalf("no builder image in the report: %+v", rep.Images)
	return upstream.ImageReport{}
}

// TestBuilderSnapshotFollowsItsDigest: check-updates proposes the builder's archive snapshot
// like any other input: the check's day (its clock, 00:00 UTC) when the builder's digest
// moves, written beside it and named in the pull request's body; a later day with the same
// digest proposes nothing (no pull request a day for the archive alone); and a lock whose
// builder digest is current but that pins no snapshot gets one.
func TestBuilderSnapshotFollowsItsDigest(t *testing.T) {
	s := upstreamtest.NewScenario(t)
	f, _ := fetcher(t, s)
	day := time.Date(2026, 12, 2, 15, 4, 5, 0, time.FixedZone("UTC+10", 10*3600)) // 05:04:05 UTC on the 2nd
	rep := checkOn(t, s, day)
	if b := builderReport(t, rep); b.Snapshot != "" || b.LatestSnapshot != "20261202T000000Z" || !b.Update {
		t.Fatalf("builder = %+v, want the snapshot 20261202T000000Z proposed with the new digest", b)
	}
	applied, err := updater(s, f).UpdateFile(context.Background(), s.LockFile, rep)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	if l.Images.Builder.Digest != s.BuilderDigest || l.Images.Builder.Snapshot != "20261202T000000Z" || !l.PinnedInTime() {
		t.Errorf("builder after the update = %+v, want digest %s and snapshot 20261202T000000Z", l.Images.Builder, s.BuilderDigest)
	}
	if l.Images.Runtime.Snapshot != "" {
		t.Errorf("the runtime image got a snapshot: %+v", l.Images.Runtime)
	}
	body := upstream.PRBody(applied, nil, nil)
	if !strings.Contains(body, "The builder's archive snapshot: `(none pinned)` → `20261202T000000Z`") {
		t.Errorf("the pull request's body does not name the snapshot:\n%s", body)
	}

	if rep := checkOn(t, s, day.AddDate(0, 0, 9)); rep.Changed() {
		t.Errorf("nine days later, with the same digest, the check proposes %+v", rep.Images)
	}

	l.Images.Builder.Snapshot = ""
	if err := l.Write(s.LockFile); err != nil {
		t.Fatal(err)
	}
	if b := builderReport(t, checkOn(t, s, day.AddDate(0, 0, 9))); !b.Update || b.Latest != s.BuilderDigest || b.LatestSnapshot != "20261211T000000Z" {
		t.Errorf("builder with its digest current and no snapshot = %+v, want the snapshot 20261211T000000Z proposed", b)
	}
}
