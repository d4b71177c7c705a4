//go:build integration

package scantest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/anchore/clio"
	"github.com/anchore/grype/grype"
	v6 "github.com/anchore/grype/grype/db/v6"
	"github.com/anchore/grype/grype/db/v6/testdb"
	"github.com/anchore/grype/grype/match"
	"github.com/anchore/grype/grype/matcher"
	"github.com/anchore/grype/grype/matcher/stock"
	"github.com/anchore/grype/grype/pkg"
	grypejson "github.com/anchore/grype/grype/presenter/json"
	"github.com/anchore/grype/grype/presenter/models"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The planted advisories. Each vulnerable one has a control that must not match: the scanner
// compares versions, it does not report every record naming a package.
const (
	opensslVuln    = "CVE-2026-99001" // OpenSSL >= 3.5.0, < 3.5.8: the test lock's 3.5.7 is in
	opensslControl = "CVE-2026-99003" // OpenSSL < 3.0.0
	glibcVuln      = "CVE-2026-99002" // Debian 13 glibc, fixed in 2.41-99 (after trixie's)
	glibcControl   = "CVE-2026-99004" // Debian 13 glibc, fixed in 2.40-1 (before trixie's)
)

// TestGrypeFindsPlantedVulnerabilities: grype, reading only the SBOM, reports the planted
// OpenSSL vulnerability by CPE (NVD's record) and the planted glibc one for libc6 by its
// pkg:deb purl (Debian 13's record about the glibc source package), with the fixed versions,
// and neither control.
func TestGrypeFindsPlantedVulnerabilities(t *testing.T) {
	sbomPath := sbomOfTestImage(t)
	matches, _ := scan(t, sbomPath, plantedDB(t))

	found := map[string]match.Match{}
	var all []string
	for _, m := range matches {
		found[m.Vulnerability.ID] = m
		all = append(all, m.Vulnerability.ID+" "+m.Package.Name+" "+m.Package.Version)
	}
	sort.Strings(all)
	t.Logf("grype found: %s", strings.Join(all, "; "))

	o, ok := found[opensslVuln]
	if !ok {
		t.Fatalf("grype did not report the planted OpenSSL %s (found %v): the SBOM's OpenSSL CPE is missing or wrong", opensslVuln, all)
	}
	if o.Package.Name != lock.OpenSSL || o.Package.Version != "3.5.7" {
		t.Errorf("%s reported on %s %s, want openssl 3.5.7", opensslVuln, o.Package.Name, o.Package.Version)
	}
	if !matchedBy(o, "cpe:2.3:a:openssl:openssl:3.5.7") {
		t.Errorf("%s was not matched by the SBOM's CPE: %v", opensslVuln, o.Details)
	}
	if got := strings.Join(o.Vulnerability.Fix.Versions, ","); got != "3.5.8" {
		t.Errorf("%s fix versions %q, want 3.5.8", opensslVuln, got)
	}

	g, ok := found[glibcVuln]
	if !ok {
		t.Fatalf("grype did not report the planted glibc %s for libc6 (found %v): the SBOM's Debian packages or their purls are missing or wrong", glibcVuln, all)
	}
	if g.Package.Name != "libc6" || !matchedBy(g, `"debian" "13"`) || !matchedBy(g, `"glibc"`) {
		t.Errorf("%s reported on %s %s by %v, want libc6 matched through Debian 13 and its source package glibc", glibcVuln, g.Package.Name, g.Package.Version, g.Details)
	}
	if got := strings.Join(g.Vulnerability.Fix.Versions, ","); got != "2.41-99" {
		t.Errorf("%s fix versions %q, want 2.41-99", glibcVuln, got)
	}
	for _, id := range []string{opensslControl, glibcControl} {
		if m, ok := found[id]; ok {
			t.Errorf("grype reported the control %s on %s %s, which the installed version is not affected by", id, m.Package.Name, m.Package.Version)
		}
	}
}

func matchedBy(m match.Match, want string) bool {
	for _, d := range m.Details {
		if strings.Contains(d.String(), want) {
			return true
		}
	}
	return false
}

// sbomOfTestImage assembles an image from a stand-in install tree on the stand-in distroless
// base, with the test lock (OpenSSL 3.5.7), and writes the SBOM nginx-forge makes for it.
func sbomOfTestImage(t *testing.T) string {
	t.Helper()
	base, rootfs := basetest.For(t, basetest.Options{})
	if rootfs.Versions["libc6"] == "" {
		t.Fatalf("the stand-in base has no libc6: %v", rootfs.Versions)
	}
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.Assemble(base, installTree(t), l, image.WithBaseRef(basetest.Name))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := image.SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "image.spdx.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// installTree is the smallest tree Assemble takes (the runtime contract's files and
// directories); the scan reads the SBOM, not the binary.
func installTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{"etc/nginx/conf.d", "etc/nginx/tls", "var/cache/nginx", "run/nginx", "usr/sbin", "usr/share/nginx/html"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, body := range map[string]string{
		"usr/sbin/nginx":                  "\x7fELF stand-in\n",
		"etc/nginx/nginx.conf":            "events {}\n",
		"etc/nginx/mime.types":            "types { text/html html; }\n",
		"usr/share/nginx/html/index.html": "<h1>nginx-forge</h1>\n",
	} {
		mode := os.FileMode(0o644)
		if strings.HasPrefix(p, "usr/sbin/") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// plantedDB builds a grype v6 database with grype's own builder from records in the formats
// its NVD and Debian providers (vunnel) write, and returns its directory.
func plantedDB(t *testing.T) string {
	t.Helper()
	in := t.TempDir()
	nvd := func(id, description string, match map[string]any) {
		match["criteria"] = "cpe:2.3:a:openssl:openssl:*:*:*:*:*:*:*:*"
		match["matchCriteriaId"] = "00000000-0000-4000-8000-" + strings.ReplaceAll(strings.TrimPrefix(id, "CVE-"), "-", "")
		match["vulnerable"] = true
		writeJSON(t, filepath.Join(in, "nvd", "results", "2026", strings.ToLower(id)+".json"), map[string]any{
			"identifier": "2026/" + strings.ToLower(id),
			"schema":     "https://raw.githubusercontent.com/anchore/vunnel/main/schema/vulnerability/nvd/schema-1.0.0.json",
			"item": map[string]any{"cve": map[string]any{
				"id": id, "published": "2026-11-01T00:00:00.000", "lastModified": "2026-11-02T00:00:00.000",
				"sourceIdentifier": "openssl-security@openssl.org", "vulnStatus": "Analyzed",
				"descriptions": []any{map[string]any{"lang": "en", "value": description}},
				"metrics": map[string]any{"cvssMetricV31": []any{map[string]any{
					"cvssData": map[string]any{"version": "3.1", "baseScore": 9.8, "baseSeverity": "CRITICAL",
						"vectorString": "CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H",
						"attackVector": "NETWORK", "attackComplexity": "LOW", "privilegesRequired": "NONE", "userInteraction": "NONE",
						"scope": "UNCHANGED", "confidentialityImpact": "HIGH", "integrityImpact": "HIGH", "availabilityImpact": "HIGH"},
					"exploitabilityScore": 3.9, "impactScore": 5.9, "source": "nvd@nist.gov", "type": "Primary"}}},
				"configurations": []any{map[string]any{"nodes": []any{map[string]any{"operator": "OR", "negate": false, "cpeMatch": []any{match}}}}},
				"references":     []any{},
			}},
		})
	}
	nvd(opensslVuln, "planted: OpenSSL 3.5 before 3.5.8", map[string]any{"versionStartIncluding": "3.5.0", "versionEndExcluding": "3.5.8"})
	nvd(opensslControl, "planted control: OpenSSL before 3.0.0", map[string]any{"versionEndExcluding": "3.0.0"})
	debian := func(id, fixed string) {
		writeJSON(t, filepath.Join(in, "debian", "results", "debian-13", strings.ToLower(id)+".json"), map[string]any{
			"identifier": "debian:13/" + strings.ToLower(id),
			"schema":     "https://raw.githubusercontent.com/anchore/vunnel/main/schema/vulnerability/os/schema-1.1.0.json",
			"item": map[string]any{"Vulnerability": map[string]any{
				"Name": id, "NamespaceName": "debian:13", "Severity": "Critical",
				"Link": "https://security-tracker.debian.org/tracker/" + id, "Description": "planted glibc flaw",
				"CVSS": []any{}, "Metadata": map[string]any{},
				"FixedIn": []any{map[string]any{"Name": "glibc", "NamespaceName": "debian:13", "Version": fixed, "VersionFormat": "dpkg",
					"VendorAdvisory": map[string]any{"AdvisorySummary": []any{}, "NoAdvisory": false}}},
			}},
		})
	}
	debian(glibcVuln, "2.41-99")
	debian(glibcControl, "2.40-1")
	out := t.TempDir()
	// The include pattern makes the builder build (without one it only rebuilds an output
	// older than its inputs, and a fresh directory has no age).
	testdb.BuildFromFlatFileDir(t, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), out, in, "**/*.json")
	return out
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// scan is `grype sbom:PATH` with CPE matching on (grype's default for packages without an
// ecosystem, such as pkg:generic), against the database in dbDir, with grype ignore rules
// (what scan-action's config applies). It returns the matches and grype's JSON report of
// them, the document scan-action writes.
func scan(t *testing.T, sbomPath, dbDir string, ignore ...match.IgnoreRule) ([]match.Match, []byte) {
	t.Helper()
	rdr, err := v6.NewReader(v6.Config{DBDirPath: dbDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdr.Close() })
	pkgs, ctx, _, err := pkg.Provide("sbom:"+sbomPath, pkg.ProviderConfig{})
	if err != nil {
		t.Fatalf("grype cannot read the SBOM: %v", err)
	}
	if ctx.Distro == nil || ctx.Distro.Name() != "debian" || ctx.Distro.Version != "13" {
		t.Errorf("grype sees the distro %v in the SBOM, want debian 13 (from the pkg:deb purls)", ctx.Distro)
	}
	provider := v6.NewVulnerabilityProvider(rdr)
	m := grype.VulnerabilityMatcher{
		VulnerabilityProvider: provider,
		Matchers:              matcher.NewDefaultMatchers(matcher.Config{Stock: stock.MatcherConfig{UseCPEs: true}}),
		IgnoreRules:           ignore,
	}
	found, ignored, err := m.FindMatches(pkgs, ctx)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := models.NewDocument(clio.Identification{Name: "grype", Version: "v0.117.0"}, pkgs, ctx, *found, ignored, provider, nil, nil, models.SortBySeverity, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	var report bytes.Buffer
	if err := grypejson.NewPresenter(models.PresenterConfig{Document: doc}).Present(&report); err != nil {
		t.Fatal(err)
	}
	return found.Sorted(), report.Bytes()
}
