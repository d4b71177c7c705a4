package advisory

import (
	"bytes"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

func find(t *testing.T, s *Snapshot, component, id string) Advisory {
	t.Helper()
	for _, a := range s.Advisories {
		if a.Component == component && a.ID == id {
			return a
		}
	}
	t.Fatalf("the snapshot has no %s %s", component, id)
	return Advisory{}
}

// The reviewed snapshot holds the advisories issue 46 names, as upstream states them.
func TestEmbeddedSnapshotHoldsTheIssuesAdvisories(t *testing.T) {
	s := embeddedSnapshot()
	rift := find(t, s, "nginx", "CVE-2026-42945")
	if rift.Severity != "medium" || rift.ReviewedSeverity != "major" || rift.Level() != LevelHigh || rift.Review == "" {
		t.Errorf("CVE-2026-42945: severity %q reviewed %q (level %s): want nginx.org's medium, reviewed major (high)", rift.Severity, rift.ReviewedSeverity, rift.Level())
	}
	if !slices.Equal(rift.Fixed, []string{"1.31.0", "1.30.1"}) || !rift.Affects("0.6.27") || !rift.Affects("1.30.0") || rift.Affects("1.30.1") || rift.Affects("0.6.26") {
		t.Errorf("CVE-2026-42945: fixed %v, affected %v: want 1.31.0, 1.30.1 and 0.6.27-1.30.0", rift.Fixed, rift.Affected)
	}
	if a := find(t, s, "nginx", "CVE-2026-42533"); a.Severity != "major" || !slices.Equal(a.Fixed, []string{"1.31.3", "1.30.4"}) {
		t.Errorf("CVE-2026-42533: %+v", a)
	}
	for _, id := range []string{"CVE-2024-7347", "CVE-2025-23419", "CVE-2025-53859"} {
		find(t, s, "nginx", id)
	}
	for id, fix := range map[string]string{"CVE-2024-6119": "3.3.2", "CVE-2024-9143": "3.3.3", "CVE-2024-5535": "3.3.2", "CVE-2025-9230": "3.5.4", "CVE-2025-9231": "3.5.4", "CVE-2025-9232": "3.5.4"} {
		if a := find(t, s, "openssl", id); !slices.Contains(a.Fixed, fix) {
			t.Errorf("%s: fixed %v, want %s among them", id, a.Fixed, fix)
		}
	}
	// The file is as Write writes it, so a refresh's diff is only what changed.
	out, err := s.Write()
	if err != nil || !bytes.Equal(out, embedded) {
		t.Errorf("advisories.json is not in Write's form (err %v): rewrite it with Snapshot.Write", err)
	}
}

// nginx.org's real file (an excerpt, testdata) parses into the advisories it states.
func TestParseNginxRecordedFeed(t *testing.T) {
	data, err := os.ReadFile("testdata/nginx-security_advisories.xml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseNginx(data, "test")
	if err != nil {
		t.Fatal(err)
	}
	// 29 items: the nginx/Windows-only one and the severity "none" one are left out.
	if len(got) != 27 {
		t.Errorf("%d advisories, want 27", len(got))
	}
	for _, a := range got {
		if a.ID == "CVE-2009-4487" || a.ID == "" {
			t.Errorf("kept %q, which nginx rates none", a.ID)
		}
		if a.ID == "CVE-2025-53859" && (!slices.Equal(a.Fixed, []string{"1.29.1"}) || a.Severity != "low") {
			t.Errorf("CVE-2025-53859: %+v", a)
		}
		if a.ID == "CVE-2025-23419" && !strings.HasPrefix(a.URL, "https://mailman.nginx.org/") {
			t.Errorf("CVE-2025-23419 url %q", a.URL)
		}
	}
}

// OpenSSL's real CVE records parse into per-branch ranges and fixed releases.
func TestParseOpenSSLRecordedRecords(t *testing.T) {
	data, err := os.ReadFile("testdata/openssl-CVE-2025-9230.json")
	if err != nil {
		t.Fatal(err)
	}
	a, keep, err := ParseOpenSSLRecord(data, "test")
	if err != nil || !keep {
		t.Fatalf("keep %v, err %v", keep, err)
	}
	if a.ID != "CVE-2025-9230" || a.Severity != "Moderate" || a.Level() != levelMedium || a.URL != "https://openssl-library.org/news/secadv/20250930.txt" {
		t.Errorf("%+v", a)
	}
	// The 1.1.1zd and 1.0.2zm (extended support) ranges are left out.
	if !slices.Equal(a.Fixed, []string{"3.5.4", "3.4.3", "3.3.5", "3.2.6", "3.0.18"}) {
		t.Errorf("fixed %v", a.Fixed)
	}
	if !a.Affects("3.5.3") || a.Affects("3.5.4") || !a.Affects("3.3.1") || a.Affects("3.1.0") {
		t.Errorf("ranges %v", a.Affected)
	}
	h, _ := os.ReadFile("testdata/openssl-CVE-2024-12797.json")
	if a, _, err := ParseOpenSSLRecord(h, "test"); err != nil || a.Level() != LevelHigh {
		t.Errorf("CVE-2024-12797: level %s err %v: want High", a.Level(), err)
	}
}

func TestAffectingTheSeedLock(t *testing.T) {
	l, err := lock.Load("../lock/seed.lock.json")
	if err != nil {
		t.Fatal(err)
	}
	fs := embeddedSnapshot().Affecting(l)
	byID := map[string]Finding{}
	for _, f := range fs {
		byID[f.ID] = f
	}
	rift, ok := byID["CVE-2026-42945"]
	if !ok || rift.Version != "1.26.2" || rift.Fix != "1.30.1" || !rift.Blocks() {
		t.Errorf("CVE-2026-42945 on nginx 1.26.2 (track stable): %+v: want fix 1.30.1, blocking", rift)
	}
	if f := byID["CVE-2024-7347"]; f.ID != "" {
		t.Errorf("1.26.2 is the fix of CVE-2024-7347, yet it is listed: %+v", f)
	}
	// OpenSSL 3.3.1 on track lts: the fix is on an LTS branch (3.5), not 3.3 or 3.4.
	if f := byID["CVE-2025-9230"]; f.Fix != "3.5.4" || f.Blocks() {
		t.Errorf("CVE-2025-9230 on 3.3.1: %+v: want fix 3.5.4, not blocking (moderate)", f)
	}
	// High; upstream lists no fix on an LTS branch (3.5 came after it), but none of its
	// ranges reaches 3.5, the branch track lts updates to: the track is unaffected, not
	// unfixed, so updating is the fix and the push is refused unacknowledged.
	if f := byID["CVE-2024-12797"]; f.Fix != "" || f.Unaffected != "3.5" || f.Unfixed() || f.Level() != LevelHigh || !f.Blocks() {
		t.Errorf("CVE-2024-12797 on 3.3.1: %+v: want no fix listed, 3.5 unaffected, blocking", f)
	}
	if l := byID["CVE-2024-12797"].String(); !strings.Contains(l, `not affecting 3.5, the branch track "lts" updates to`) || strings.Contains(l, "no fixed release") {
		t.Errorf("line %q: want it to say 3.5 is unaffected, not that the track has no fix", l)
	}
	if !strings.Contains(rift.String(), "CVE-2026-42945") || !strings.Contains(rift.String(), "fixed in 1.30.1") {
		t.Errorf("line %q", rift.String())
	}
}

func TestFixOnTrack(t *testing.T) {
	a := Advisory{Component: "nginx", Fixed: []string{"1.31.0", "1.30.1"}}
	o := Advisory{Component: "openssl", Fixed: []string{"3.6.1", "3.5.5", "3.4.4", "3.0.19"}}
	for _, c := range []struct {
		a             Advisory
		track, pinned string
		want          string
	}{
		{a, "stable", "1.26.2", "1.30.1"},
		{a, "mainline", "1.29.0", "1.31.0"},
		{a, "1.30", "1.30.0", "1.30.1"},
		{a, "1.26", "1.26.2", ""}, // no fix on 1.26: none, not another branch's
		{a, "latest", "1.26.2", "1.31.0"},
		{o, "lts", "3.3.1", "3.5.5"},
		{o, "3.4", "3.4.0", "3.4.4"},
		{o, "lts", "3.5.9", ""},
	} {
		if got := c.a.FixOnTrack(c.track, c.pinned); got != c.want {
			t.Errorf("%s %s on %q: %q, want %q", c.a.Component, c.pinned, c.track, got, c.want)
		}
	}
}

// An OpenSSL advisory whose ranges stop before 3.5 leaves track "lts" unaffected (the
// newest LTS branch, 3.5, is outside them); one that reaches into 3.5, a pin already on 3.5,
// or another track, is not said to be.
func TestUnaffectedOnTrack(t *testing.T) {
	pre35 := Advisory{Component: "openssl", Affected: []Range{{From: "3.2.0", Before: "3.2.4"}, {From: "3.3.0", Before: "3.3.3"}, {From: "3.4.0", Before: "3.4.1"}}, Fixed: []string{"3.4.1", "3.3.3", "3.2.4"}}
	spans := Advisory{Component: "openssl", Affected: []Range{{From: "3.0.0", To: "3.5.1"}}}
	in35 := Advisory{Component: "openssl", Affected: []Range{{From: "3.3.0", Before: "3.3.5"}, {From: "3.5.1", Before: "3.5.4"}}}
	nginx := Advisory{Component: "nginx", Affected: []Range{{From: "1.25.0", To: "1.26.2"}}}
	for _, c := range []struct {
		a             Advisory
		track, pinned string
		want          string
	}{
		{pre35, "lts", "3.3.1", "3.5"},
		{pre35, "lts", "3.2.0", "3.5"},
		{pre35, "3.3", "3.3.1", ""}, // the track is the 3.3 branch: its fix is FixOnTrack's
		{pre35, "lts", "3.5.0", ""}, // already on the newest LTS branch
		{spans, "lts", "3.3.1", ""}, // the range runs into 3.5
		{in35, "lts", "3.3.1", ""},  // a range starts on 3.5
		{nginx, "stable", "1.26.2", ""},
	} {
		if got := c.a.UnaffectedOnTrack(c.track, c.pinned); got != c.want {
			t.Errorf("%s %s on %q, affected %v: %q, want %q", c.a.Component, c.pinned, c.track, c.a.Affected, got, c.want)
		}
	}
}

// A refresh keeps a reviewed severity and its reason by ID.
func TestRefreshKeepsReview(t *testing.T) {
	s := embeddedSnapshot()
	fresh := []Advisory{{Component: "nginx", ID: "CVE-2026-42945", Severity: "medium", Summary: "x", Source: "feed", Affected: []Range{{From: "0.6.27", To: "1.30.0"}}, Fixed: []string{"1.30.1"}}}
	out, err := s.Refresh("nginx", fresh, Feed{URL: "https://example.invalid/x", Checked: "2026-12-08"})
	if err != nil {
		t.Fatal(err)
	}
	if a := find(t, out, "nginx", "CVE-2026-42945"); a.ReviewedSeverity != "major" || a.Level() != LevelHigh {
		t.Errorf("reviewed severity lost: %+v", a)
	}
	if find(t, s, "nginx", "CVE-2024-7347").ID == "" {
		t.Error("Refresh changed its receiver")
	}
}

// Strict readers: each hostile or malformed input is refused, naming what is wrong.
func TestStrictReaders(t *testing.T) {
	item := func(attrs string) []byte {
		return []byte(`<article><section><security><item name="x" severity="major" cve="2026-1" ` + attrs + `/></security></section></article>`)
	}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"range does not parse": {item(`good="1.2.3+" vulnerable="1.2.x-1.3"`), `is not VERSION or VERSION-VERSION`},
		"empty range":          {item(`good="1.2.3+" vulnerable="1.5.0-1.2.0"`), "empty"},
		"fixed not a version":  {item(`good="soon" vulnerable="1.2.0-1.3.0"`), `good "soon"`},
		"unknown attribute":    {item(`good="1.2.3+" vulnerable="1.2.0" fixed="1"`), `attribute "fixed"`},
		"not XML":              {[]byte("<html><body>rate limited"), "not well-formed XML"},
		"no items":             {[]byte("<article></article>"), "no <security> list"},
		"enormous":             {bytes.Repeat([]byte(" "), MaxNginxFeed+1), "over the"},
	} {
		if _, err := ParseNginx(c.data, "t"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
	rec, _ := os.ReadFile("testdata/openssl-CVE-2025-9230.json")
	bad := bytes.Replace(rec, []byte(`"lessThan": "3.5.4"`), []byte(`"lessThan": "3.5.4-beta"`), 1)
	if _, _, err := ParseOpenSSLRecord(bad, "t"); err == nil || !strings.Contains(err.Error(), "3.5.4-beta") {
		t.Errorf("a lessThan that does not parse: %v", err)
	}
	if _, err := parseSnapshot(bytes.Replace(embedded, []byte(`"schema": 1,`), []byte(`"schema": 1, "extra": 2,`), 1)); err == nil {
		t.Error("an unknown field in the snapshot was accepted")
	}
	if _, err := parseSnapshot(bytes.Replace(embedded, []byte(`"severity": "medium"`), []byte(`"severity": "urgent"`), 1)); err == nil {
		t.Error("an unknown severity word was accepted")
	}
}
