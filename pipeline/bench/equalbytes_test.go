package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// Sizes for the level-choice tests. debianZlib is recorded: the body bytes of the bench's
// JSON from Debian 12's nginx 1.22.1 (zlib 1.2.13) at gzip_comp_level 1..9, as
// TestGzipEqualBytesDebianAgainstItself's probe logged them (2026-12-06; level 5's 18114 is
// MEASUREMENTS.md's Debian figure too). The other cases are made up around issue 39's
// figures for zlib-ng (its level 1 sends a fifth to a third more than zlib's, its level 2
// less than zlib's level 1), and their names say so.
var debianZlib = []int{23224, 21810, 20079, 19660, 18114, 17402, 16962, 16663, 16663}

func TestChooseGzipLevel(t *testing.T) {
	for _, tc := range []struct {
		name  string
		sizes []int
		bound int
		level int
		fits  bool
	}{
		// The baseline against its own level 1: always level 1.
		{"recorded zlib against its own level 1", debianZlib, debianZlib[0], 1, true},
		// zlib against zlib's shipped level 5 bytes: level 5 is the first that small.
		{"recorded zlib against its level 5", debianZlib, debianZlib[4], 5, true},
		// Made up, zlib-ng-like: level 1 a third more than the bound, level 2 below it.
		{"level 1 too large, level 2 fits", []int{31200, 22100, 21700, 19000, 17900, 17700, 17600, 17500, 17450}, 23224, 2, true},
		// Equal to the bound fits ("no larger than").
		{"equal bytes fit", []int{30000, 23224, 1, 1, 1, 1, 1, 1, 1}, 23224, 2, true},
		// Not monotonic: the lowest fitting level wins, not the smallest output.
		{"lowest level, not fewest bytes", []int{30000, 25000, 20000, 22000, 15000, 15000, 15000, 15000, 15000}, 21000, 3, true},
		// Nothing within the bound: the fewest bytes (the lowest of equals: zlib's levels 8
		// and 9 send the same bytes here), flagged.
		{"recorded zlib, no level small enough", debianZlib, 16000, 8, false},
		{"no level small enough", []int{40000, 39000, 38000, 37000, 36000, 35500, 35400, 35300, 35300}, 23224, 8, false},
		{"no level small enough, level 9 smallest", []int{40000, 39000, 38000, 37000, 36000, 35500, 35400, 35300, 35200}, 1000, 9, false},
	} {
		level, fits, err := chooseGzipLevel(tc.sizes, tc.bound)
		if err != nil || level != tc.level || fits != tc.fits {
			t.Errorf("%s: chooseGzipLevel(%v, %d) = %d, %v, %v; want %d, %v", tc.name, tc.sizes, tc.bound, level, fits, err, tc.level, tc.fits)
		}
	}
}

// A probe that went wrong is an error naming what is wrong, never a level.
func TestChooseGzipLevelRejects(t *testing.T) {
	for _, tc := range []struct {
		sizes []int
		bound int
		want  string
	}{
		{debianZlib[:8], 23224, "8 sizes, want one per level 1..9"},
		{append(debianZlib, 1), 23224, "10 sizes"},
		{debianZlib, 0, "bound 0 bytes"},
		{[]int{23224, 0, 1, 1, 1, 1, 1, 1, 1}, 23224, "level 2 has 0 bytes"},
	} {
		if level, _, err := chooseGzipLevel(tc.sizes, tc.bound); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("chooseGzipLevel(%v, %d) = %d, %v; want an error with %q", tc.sizes, tc.bound, level, err, tc.want)
		}
	}
}

// The scenario asks each server for its own level's location: none before the probe.
func TestEqualBytesURL(t *testing.T) {
	sc, err := SelectScenarios("gzip-equal-bytes")
	if err != nil || !sc[0].EqualBytes || !sc[0].asksForCompression() {
		t.Fatalf("SelectScenarios(gzip-equal-bytes) = %+v, %v", sc, err)
	}
	c := Config{HTTPPort: 8080}
	if got := sc[0].URL(c); got != "http://127.0.0.1:8080/gz0/data.json" {
		t.Errorf("URL before the probe = %s", got)
	}
	c.EqualBytesLevel = 2
	if got := sc[0].URL(c); got != "http://127.0.0.1:8080/gz2/data.json" {
		t.Errorf("URL at level 2 = %s", got)
	}
	gz, _ := SelectScenarios("gzip")
	if got := gz[0].URL(c); got != "http://127.0.0.1:8080/"+JSONFile {
		t.Errorf("the gzip scenario follows the chosen level: %s", got)
	}
}

// The rendered config has a location per level, each at its level, serving the /gz/ file.
func TestRenderGzipLevelLocations(t *testing.T) {
	c := Config{Knobs: DefaultKnobs(), Prefix: "/p", Content: "/c", HTTPPort: 1, HTTPSPort: 2}
	b, err := c.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range c.GzipLevels() {
		want := "location /gz" + string(rune('0'+l)) + "/ {\n            alias /c/html/gz/;\n            gzip on;\n            gzip_types application/json;\n            gzip_min_length 1024;\n            gzip_comp_level " + string(rune('0'+l)) + ";\n        }"
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("rendered config lacks\n%s\n---\n%s", want, b)
		}
	}
	if n := bytes.Count(b, []byte("location /gz")); n != 10 {
		t.Errorf("%d /gz locations, want /gz/ and /gz1/../gz9/", n)
	}
}

// Out of the box the servers run their own configs, which have no /gzN/ locations: Run
// leaves gzip-equal-bytes out, and refuses a run of nothing else before starting anything.
func TestEqualBytesIsLikeForLikeOnly(t *testing.T) {
	all, _ := SelectScenarios("all")
	oob := []Target{{Name: "a", Profile: &Profile{}}, {Name: "b"}}
	kept, dropped, err := likeForLikeOnly(oob, all)
	if err != nil || len(kept) != len(all)-1 || strings.Join(dropped, ",") != "gzip-equal-bytes" {
		t.Errorf("out of the box: kept %d of %d, dropped %v, %v", len(kept), len(all), dropped, err)
	}
	for _, s := range kept {
		if s.EqualBytes {
			t.Errorf("out of the box kept %s", s.Name)
		}
	}
	lfl := []Target{{Name: "a"}, {Name: "b"}}
	if kept, dropped, err := likeForLikeOnly(lfl, all); err != nil || len(kept) != len(all) || dropped != nil {
		t.Errorf("like for like: kept %d of %d, dropped %v, %v", len(kept), len(all), dropped, err)
	}
	only, _ := SelectScenarios("gzip-equal-bytes")
	_, err = Run(context.Background(), oob, 1, Options{Scenarios: only})
	if err == nil || !strings.Contains(err.Error(), "like for like only") || !strings.Contains(err.Error(), "--mode like-for-like") {
		t.Errorf("Run out of the box with only gzip-equal-bytes: %v", err)
	}
}

// The report names each server's level and bytes, and flags a level that does not fit.
func TestReportGzipLevels(t *testing.T) {
	rep := &Report{Baseline: "baseline", Scenarios: []ScenarioReport{{Name: "gzip-equal-bytes", GzipLevels: []GzipLevelChoice{
		{Target: "variant", Level: 2, Bytes: 22100, Bound: 23224, Fits: true, Sizes: []int{31200, 22100, 21700, 19000, 17900, 17700, 17600, 17500, 17450}},
		{Target: "odd", Level: 9, Bytes: 35200, Bound: 23224, Sizes: []int{40000, 39000, 38000, 37000, 36000, 35500, 35400, 35300, 35200}},
		{Target: "baseline", Level: 1, Bytes: 23224, Bound: 23224, Fits: true, Sizes: debianZlib},
	}}}}
	var text, md bytes.Buffer
	if err := rep.writeExtras(&text, false); err != nil {
		t.Fatal(err)
	}
	if err := rep.writeExtras(&md, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"gzip-equal-bytes: each server at the lowest gzip_comp_level whose response is no larger than baseline's at level 1, nginx's default (23224 bytes)",
		"variant   2                            22100  31200",
		"odd       9 (none fits: fewest bytes)",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, text.String())
		}
	}
	if want := "| variant | 2 | 22100 | 31200 | 22100 |"; !strings.Contains(md.String(), want) {
		t.Errorf("Markdown lacks %q:\n%s", want, md.String())
	}
	g := rep.Scenarios[0].GzipLevels
	if s := g[0].String(); s != "variant level 2, 22100 bytes (baseline's level 1: 23224)" {
		t.Errorf("String() = %q", s)
	}
	if s := g[1].String(); !strings.Contains(s, "not equal bytes") {
		t.Errorf("String() of a level that does not fit = %q", s)
	}
}
