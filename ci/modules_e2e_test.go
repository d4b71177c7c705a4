//go:build integration

package main

import (
	"archive/tar"
	"errors"
	"io"

	"bytes"
	"context"
	"encoding/json"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestModulesCatalogueEndToEnd is the module catalogue as a person types it, through the
// command's flag parsing: `ci build --engine host --lock <modules test lock> --modules
// +geoip2,+echo,+fancyindex,+brotli --output` compiles every catalogue module this machine's
// mirror serves into nginx (libmaxminddb in its own static stage), and the build's smoke run
// passes every check with none skipped, each module's own check among them (geoip2 maps an
// address to a country from the database the suite writes; echo answers from a directive;
// fancyindex lists a directory).
// The SBOM lists each module's components with version, licence and purl, and the image
// holds each licence text under /usr/share/licenses. This is the one compile of the
// catalogue in CI (amd64, host engine); the zlib, PCRE2 and OpenSSL stages are the test
// twin's, so only the module stages and nginx compile.
func TestModulesCatalogueEndToEnd(t *testing.T) {
	mirrorURL, reg, base := variantE2E(t)
	_ = reg
	lockFile := filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "testdata", "modules.lock.json")
	l, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	mods := []string{"geoip2", "echo", "fancyindex", "brotli"}
	dir := t.TempDir()
	out := filepath.Join(dir, "modules.tar")
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	args := []string{"build", "--engine", "host", "--lock", lockFile, "--modules", "+" + strings.Join(mods, ",+"),
		"--mirror", mirrorURL, "--cache", testenv.BuildCacheDir(), "--runtime-image", base.String(),
		"--output", out, "-v"}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	log := stderr.String()
	logAtEnd(t, "modules build", log)
	if m := regexp.MustCompile(`smoke \(linux/amd64\): (\d+) passed, 0 failed, 0 skipped`).FindStringSubmatch(log); m == nil {
		t.Errorf("the modules build's smoke run did not pass every check with none skipped:\n%s", smokeNotPassed(log))
	}
	for _, name := range mods {
		// Each module's own check is a row of the table, passed (not the "not expected" pass).
		if !regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s{2,}PASS\s{2,}`).MatchString(log) {
			t.Errorf("no PASS row for module %s's smoke check in the build log", name)
		}
	}
	checkModulesSBOM(t, out+".spdx.json", l, mods)
	checkModulesLicenses(t, out, mods)
}

// checkModulesSBOM: each component of each module is a package with the lock's version, a
// licence (the component table's) and a purl.
func checkModulesSBOM(t *testing.T, file string, l *lock.Lock, mods []string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Packages []struct {
			Name, VersionInfo, LicenseDeclared string
			ExternalRefs                       []struct{ ReferenceType, ReferenceLocator string }
		}
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range plan.Modules {
		if !contains(mods, m.Name) {
			continue
		}
		for _, name := range m.Components {
			c, _ := l.Component(name)
			spec, _ := lock.SpecOf(name)
			found := false
			for _, p := range doc.Packages {
				if p.Name != name {
					continue
				}
				found = true
				if p.VersionInfo != c.Version || p.LicenseDeclared != spec.License {
					t.Errorf("SBOM package %s: version %q licence %q, want %q %q", name, p.VersionInfo, p.LicenseDeclared, c.Version, spec.License)
				}
				purl := false
				for _, r := range p.ExternalRefs {
					purl = purl || (r.ReferenceType == "purl" && strings.Contains(r.ReferenceLocator, "@"+c.Version))
				}
				if !purl {
					t.Errorf("SBOM package %s has no purl of version %s: %+v", name, c.Version, p.ExternalRefs)
				}
			}
			if !found {
				t.Errorf("SBOM has no package %s (module %s)", name, m.Name)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// checkModulesLicenses: the image's nginx layer holds, for every component of every module,
// one file of each of the component table's licence-file groups under usr/share/licenses.
func checkModulesLicenses(t *testing.T, output string, mods []string) {
	t.Helper()
	img, err := tarball.ImageFromPath(output, nil)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files[strings.TrimPrefix(h.Name, "./")] = h.Size
		}
	}
	for _, m := range plan.Modules {
		if !contains(mods, m.Name) {
			continue
		}
		for _, name := range m.Components {
			spec, _ := lock.SpecOf(name)
			for _, alts := range spec.LicenseFiles {
				ok := false
				for _, f := range alts {
					ok = ok || files[plan.LicenseDir+"/"+name+"/"+f] > 0
				}
				if !ok {
					t.Errorf("the image has none of %v under /%s/%s (module %s)", alts, plan.LicenseDir, name, m.Name)
				}
			}
		}
	}
}
