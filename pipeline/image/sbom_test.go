package image

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/package-url/packageurl-go"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"
	"github.com/spdx/tools-golang/spdx/v2/common"
	"github.com/spdx/tools-golang/spdxlib"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// Each source package's comment in the SBOM says what vouches for it: the pinned signers for
// a signed component, the lock's "unsigned" reason for one without a signature, and plainly
// that there is no reason when the lock gives none.
func TestSBOMSignatureComments(t *testing.T) {
	l := testLock(t)
	// The test lock has one component of each kind after this: openssl signed, nginx and
	// PCRE2 unsigned with a reason, zlib unsigned without one.
	zlib := l.MustComponent(lock.Zlib)
	zlib.Unsigned = ""
	l.SetComponent(zlib)
	img := assembleSynthetic(t, "amd64")
	parsed := sbomOf(t, img, l)
	comments := map[string]string{}
	for _, p := range parsed.Packages {
		comments[p.PackageName] = p.PackageComment
	}
	for _, name := range []string{lock.Nginx, lock.PCRE2} {
		c := l.MustComponent(name)
		if c.Unsigned == "" || c.Signature != nil {
			t.Fatalf("test lock: %s should be unsigned with a reason", name)
		}
		if want := "NO PGP signature (unsigned: " + c.Unsigned + ")"; !strings.Contains(comments[name], want) {
			t.Errorf("%s comment %q does not carry the lock's reason %q", name, comments[name], want)
		}
	}
	o := l.MustComponent(lock.OpenSSL)
	if got := comments[lock.OpenSSL]; !strings.Contains(got, o.Signature.URL) || !strings.Contains(got, o.Signature.Fingerprints[0]) || strings.Contains(got, "NO PGP") {
		t.Errorf("openssl comment %q does not name its signature and signers", got)
	}
	if got := comments[lock.Zlib]; !strings.Contains(got, "NO PGP signature, and the lock gives no reason") {
		t.Errorf("zlib comment %q does not say it is unsigned without a reason", got)
	}
}

// The optional modules and their libraries are listed, statically linked into nginx and
// licensed, when the lock has a module with its library; a library pinned without its module
// (the test lock's zstd) is not built, so it is not listed.
func TestSBOMOptionalComponents(t *testing.T) {
	l := testLock(t)
	img := assembleSynthetic(t, "amd64")
	parsed := sbomOf(t, img, l)
	pkgs := packagesByName(parsed)
	links := map[string]bool{}
	for _, r := range parsed.Relationships {
		if r.RefA.ElementRefID == componentID(lock.Nginx) && r.Relationship == "STATIC_LINK" {
			links[string(r.RefB.ElementRefID)] = true
		}
	}
	for name, license := range map[string]string{lock.Brotli: "MIT", lock.NgxBrotli: "BSD-2-Clause"} {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("SBOM does not list %s", name)
			continue
		}
		c := l.MustComponent(name)
		if p.PackageVersion != c.Version || p.PackageChecksums[0].Value != c.SHA256 || p.PackageLicenseDeclared != license {
			t.Errorf("%s: version %q checksum %v license %q; want the lock's and %s", name, p.PackageVersion, p.PackageChecksums, p.PackageLicenseDeclared, license)
		}
		if !links[string(p.PackageSPDXIdentifier)] {
			t.Errorf("%s is not STATIC_LINK of nginx", name)
		}
	}
	if _, ok := pkgs[lock.Zstd]; ok {
		t.Error("SBOM lists zstd, which the test lock pins without its module (so nothing links it)")
	}
	if img := pkgs["nginx-forge"].PackageLicenseDeclared; !strings.Contains(img, "MIT") {
		t.Errorf("image license %q leaves out brotli's MIT", img)
	}
}

// An image built with `--modules` leaving out brotli (whose components the test lock pins)
// names nothing of brotli: not in the SBOM, its relationships or licence, not in the
// annotations or the history. The same lock with brotli among the modules lists it, so the
// option selects rather than drops everything optional.
func TestSBOMFollowsModules(t *testing.T) {
	l := testLock(t)
	withBrotli := append(append([]string(nil), plan.DefaultModules...), "brotli")
	for _, tc := range []struct {
		name    string
		modules []string
		listed  bool
	}{
		{"brotli dropped", plan.DefaultModules, false},
		{"brotli chosen", withBrotli, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img := assembleSynthetic(t, "amd64", WithModules(tc.modules))
			parsed := sbomOf(t, img, l, WithModules(tc.modules))
			pkgs := packagesByName(parsed)
			related := map[string]bool{}
			for _, r := range parsed.Relationships {
				related[string(r.RefB.ElementRefID)] = true
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			var history strings.Builder
			for _, h := range cfg.History {
				history.WriteString(h.CreatedBy + "\n")
			}
			for _, name := range []string{lock.Brotli, lock.NgxBrotli} {
				_, inSBOM := pkgs[name]
				_, annotated := m.Annotations[AnnotationPrefix+name+".version"]
				inHistory := strings.Contains(history.String(), name+" ")
				if inSBOM != tc.listed || related[string(componentID(name))] != tc.listed || annotated != tc.listed || inHistory != tc.listed {
					t.Errorf("%s: in SBOM %v, related %v, annotated %v, in history %v; want all %v (modules %s)",
						name, inSBOM, related[string(componentID(name))], annotated, inHistory, tc.listed, strings.Join(tc.modules, ","))
				}
			}
			for _, lic := range []string{pkgs["nginx-forge"].PackageLicenseDeclared, m.Annotations[annotationLicenses]} {
				if strings.Contains(lic, "MIT") != tc.listed {
					t.Errorf("licence %q: brotli's MIT present = %v, want %v", lic, !tc.listed, tc.listed)
				}
			}
			for _, name := range []string{lock.Nginx, lock.OpenSSL, lock.PCRE2, lock.Zlib} {
				if _, ok := pkgs[name]; !ok {
					t.Errorf("SBOM lacks the required component %s", name)
				}
			}
		})
	}
}

// The SBOM describes the image it is given: options (or a lock) that disagree with what the
// image was assembled from are refused, and so is a module list the plan would refuse.
func TestSBOMRefusesOtherModulesThanTheImage(t *testing.T) {
	l := testLock(t)
	dropped := assembleSynthetic(t, "amd64", WithModules(plan.DefaultModules))
	for _, tc := range []struct {
		name    string
		img     v1.Image
		opts    []Option
		wantErr string
	}{
		{"image without brotli, SBOM by default with it", dropped, nil, "the SBOM would list brotli 1.1.0, but the image's annotations do not name it"},
		{"image with brotli, SBOM without", assembleSynthetic(t, "amd64"), []Option{WithModules(plan.DefaultModules)}, "built from brotli 1.1.0, but the SBOM's options leave it out"},
		{"module whose components the lock lacks", dropped, []Option{WithModules(append(append([]string(nil), plan.DefaultModules...), "zstd"))}, `module "zstd" is built from the lock components zstd_nginx_module and zstd`},
		{"unknown module", dropped, []Option{WithModules([]string{"http_ssl", "http_nonesuch"})}, `unknown nginx module "http_nonesuch"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := SBOM(tc.img, l, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("err = %v; want one saying %q", err, tc.wantErr)
			}
		})
	}
}

// The PGO profile a pgo build used is in the annotations and the SBOM's nginx package: the
// recorded profile's digest, or that the build trained its own; nothing without WithProfile.
func TestProfileRecorded(t *testing.T) {
	l := testLock(t)
	rec := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct{ profile, want string }{
		{rec, "PGO profile " + rec + " (recorded in the lock"},
		{ProfileTrained, "trained during this build (not reproducible)"},
		{"", ""},
	} {
		var opts []Option
		if tc.profile != "" {
			opts = append(opts, WithProfile(tc.profile))
		}
		img := assembleSynthetic(t, "amd64", opts...)
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Annotations[annotationProfile]; got != tc.profile {
			t.Errorf("annotation %s = %q, want %q", annotationProfile, got, tc.profile)
		}
		parsed := sbomOf(t, img, l, opts...)
		for _, p := range parsed.Packages {
			if p.PackageName != lock.Nginx {
				continue
			}
			if tc.want == "" && strings.Contains(p.PackageComment, "PGO profile") || !strings.Contains(p.PackageComment, tc.want) {
				t.Errorf("profile %q: nginx comment %q, want %q", tc.profile, p.PackageComment, tc.want)
			}
		}
	}
}

// sbomOf is SBOM(img, l, opts...) read back with the SPDX library and validated by it (every
// relationship names an element of the document), so a document the library cannot read fails
// every SBOM test.
func sbomOf(t *testing.T, img v1.Image, l *lock.Lock, opts ...Option) *spdx.Document {
	t.Helper()
	doc, err := SBOM(img, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return parseSBOM(t, doc)
}

func parseSBOM(t *testing.T, doc []byte) *spdx.Document {
	t.Helper()
	parsed, err := spdxjson.Read(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("the SPDX library cannot read the SBOM: %v", err)
	}
	if err := spdxlib.ValidateDocument(parsed); err != nil {
		t.Fatalf("the SPDX library refuses the SBOM: %v", err)
	}
	return parsed
}

func packagesByName(doc *spdx.Document) map[string]*spdx.Package {
	pkgs := map[string]*spdx.Package{}
	for _, p := range doc.Packages {
		pkgs[p.PackageName] = p
	}
	return pkgs
}

// What scanners match by: every compiled component carries a CPE 2.3 (NVD's vendor and
// product) and a purl naming the tarball it was built from; the base's Debian packages are
// listed from its dpkg database (status.d stanzas, not the md5sums beside them) with
// pkg:deb purls naming the distro and source package, and the base CONTAINS them.
func TestSBOMScannerIdentifiers(t *testing.T) {
	l := testLock(t)
	parsed := sbomOf(t, assembleOn(t, syntheticDebianBase(t, "arm64")), l)
	pkgs := packagesByName(parsed)
	refs := func(p *spdx.Package, kind string) []string {
		var out []string
		for _, r := range p.PackageExternalReferences {
			if r.RefType == kind {
				out = append(out, r.Locator)
			}
		}
		return out
	}
	wantCPE := map[string][]string{
		lock.OpenSSL: {"cpe:2.3:a:openssl:openssl:3.5.7:*:*:*:*:*:*:*"},
		lock.Nginx:   {"cpe:2.3:a:f5:nginx:1.26.3:*:*:*:*:*:*:*", "cpe:2.3:a:nginx:nginx:1.26.3:*:*:*:*:*:*:*"},
		lock.PCRE2:   {"cpe:2.3:a:pcre:pcre2:10.46:*:*:*:*:*:*:*"},
		lock.Zlib:    {"cpe:2.3:a:zlib:zlib:1.3.1:*:*:*:*:*:*:*"},
		lock.Brotli:  {"cpe:2.3:a:google:brotli:1.1.0:*:*:*:*:*:*:*"},
	}
	for name, want := range wantCPE {
		p := pkgs[name]
		if p == nil {
			t.Errorf("SBOM lacks %s", name)
			continue
		}
		if got := refs(p, "cpe23Type"); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s CPEs %q, want %q", name, got, want)
		}
		c := l.MustComponent(name)
		purls := refs(p, "purl")
		if len(purls) != 1 {
			t.Fatalf("%s purls %q, want one", name, purls)
		}
		u, err := packageurl.FromString(purls[0])
		if err != nil {
			t.Fatalf("%s purl %q: %v", name, purls[0], err)
		}
		q := u.Qualifiers.Map()
		if u.Type != "generic" || u.Name != name || u.Version != c.Version || q["download_url"] != c.URL || q["checksum"] != "sha256:"+c.SHA256 {
			t.Errorf("%s purl %q: want pkg:generic/%s@%s with the lock's download_url and checksum", name, purls[0], name, c.Version)
		}
	}
	for _, p := range parsed.Packages {
		for _, c := range refs(p, "cpe23Type") {
			if strings.Count(c, ":") != 12 || !strings.HasPrefix(c, "cpe:2.3:a:") {
				t.Errorf("%s: %q is not a CPE 2.3 formatted string", p.PackageName, c)
			}
		}
	}
	wantDeb := map[string]string{
		"base-files": "pkg:deb/debian/base-files@13.8%2Bdeb13u1?arch=arm64&distro=debian-13",
		"libc6":      "pkg:deb/debian/libc6@2.41-12?arch=arm64&distro=debian-13&upstream=glibc",
		"libstdc++6": "pkg:deb/debian/libstdc%2B%2B6@14.2.0-19?arch=arm64&distro=debian-13&upstream=gcc-14",
		"tzdata":     "pkg:deb/debian/tzdata@2025b-4%2Bdeb13u1?arch=all&distro=debian-13",
	}
	contained := map[common.ElementID]bool{}
	for _, r := range parsed.Relationships {
		if r.RefA.ElementRefID == "Base" && r.Relationship == "CONTAINS" {
			contained[r.RefB.ElementRefID] = true
		}
	}
	debs := 0
	for _, p := range parsed.Packages {
		if !strings.HasPrefix(string(p.PackageSPDXIdentifier), "Deb-") {
			continue
		}
		debs++
		if got := refs(p, "purl"); len(got) != 1 || got[0] != wantDeb[p.PackageName] {
			t.Errorf("Debian package %s: purls %q, want %q", p.PackageName, got, wantDeb[p.PackageName])
		}
		if !contained[p.PackageSPDXIdentifier] {
			t.Errorf("the base does not CONTAIN %s", p.PackageName)
		}
	}
	if debs != len(wantDeb) {
		t.Errorf("SBOM lists %d Debian packages, want %d (%v)", debs, len(wantDeb), wantDeb)
	}
}

// A base without a dpkg database lists no Debian packages and says why in the base's comment.
func TestSBOMBaseWithoutDpkg(t *testing.T) {
	parsed := sbomOf(t, assembleSynthetic(t, "amd64"), testLock(t))
	for _, p := range parsed.Packages {
		if strings.HasPrefix(string(p.PackageSPDXIdentifier), "Deb-") {
			t.Errorf("SBOM lists Debian package %s for a base without dpkg", p.PackageName)
		}
		if p.PackageSPDXIdentifier == "Base" && !strings.Contains(p.PackageComment, "no dpkg database") {
			t.Errorf("base comment %q does not say it has no dpkg database", p.PackageComment)
		}
	}
}

// dpkg's status file remembers removed packages whose configuration files remain
// ("deinstall ok config-files"): they are not in the image, so not in the SBOM.
func TestParseDpkgStatus(t *testing.T) {
	status := "Package: libc6\nStatus: install ok installed\nSource: glibc (2.39-0ubuntu8)\nVersion: 2.39-0ubuntu8.3\nArchitecture: amd64\n\n" +
		"Package: oldlib\nStatus: deinstall ok config-files\nVersion: 1.0-1\n\n" +
		"Package: zlib1g\nStatus: install ok installed\nSource: zlib\nVersion: 1:1.3.dfsg-3.1ubuntu2\nArchitecture: amd64\n"
	got := parseDpkgStatus([]byte(status), "var/lib/dpkg/status")
	if len(got) != 2 || got[0].name != "libc6" || got[1].name != "zlib1g" {
		t.Fatalf("parsed %+v, want libc6 and zlib1g only", got)
	}
	osr := osRelease{"ubuntu", "24.04"}
	if p := got[0].purl(osr); p != "pkg:deb/ubuntu/libc6@2.39-0ubuntu8.3?arch=amd64&distro=ubuntu-24.04&upstream=glibc%402.39-0ubuntu8" {
		t.Errorf("libc6 purl %s", p)
	}
	if p := got[1].purl(osr); p != "pkg:deb/ubuntu/zlib1g@1%3A1.3.dfsg-3.1ubuntu2?arch=amd64&distro=ubuntu-24.04&upstream=zlib" {
		t.Errorf("zlib1g purl %s", p)
	}
}

// unlicensed lists the names table has no licence for.
func unlicensed(names []string, table map[string]string) []string {
	var out []string
	for _, n := range names {
		if l := table[n]; l == "" || l == "NOASSERTION" {
			out = append(out, n)
		}
	}
	return out
}

// Every component a lock can pin, and libcrypt, has its licence in the table, so a component
// added to the lock without one fails here rather than reaching an SBOM as NOASSERTION. The
// planted table proves the check sees a missing entry.
func TestLicensesCoverEveryComponent(t *testing.T) {
	names := append(lock.AllComponents(), Libcrypt)
	licenses := map[string]string{}
	for _, n := range names {
		licenses[n] = licenseOf(n)
	}
	if missing := unlicensed(names, licenses); len(missing) > 0 {
		t.Errorf("no SPDX licence for %v: add each to its row of the component table (lock.Spec.License), read from the license file the image ships (LicenseFiles)", missing)
	}
	planted := map[string]string{}
	for k, v := range licenses {
		planted[k] = v
	}
	delete(planted, lock.Zstd)
	planted[lock.Nginx] = "NOASSERTION"
	if got := unlicensed(names, planted); strings.Join(got, ",") != lock.Nginx+","+lock.Zstd {
		t.Errorf("planted table: unlicensed = %v, want [%s %s]", got, lock.Nginx, lock.Zstd)
	}
	for _, name := range lock.AllComponents() {
		if s, _ := lock.SpecOf(name); len(s.LicenseFiles) == 0 {
			t.Errorf("%s has a licence here but the image ships no license file for it (lock.Spec.LicenseFiles)", name)
		}
	}
}

// Each package this project compiles in (every component of both optional modules too, and
// libcrypt) declares and concludes its licence from the table; the base's Debian packages
// declare what their copyright files say (checkDebianLicenses).
func TestSBOMDeclaresOurLicenses(t *testing.T) {
	l := testLock(t)
	zm := l.MustComponent(lock.NgxBrotli)
	zm.Name, zm.Version, zm.URL = lock.ZstdNginxModule, "0.1.1", "https://github.com/tokers/zstd-nginx-module/archive/refs/tags/0.1.1.tar.gz"
	l.SetComponent(zm)
	modules := append(append([]string(nil), plan.DefaultModules...), "brotli", "zstd")
	opts := []Option{WithBaseRef("gcr.io/distroless/base-nossl-debian13:nonroot"), WithLibcrypt("1:4.4.33-2"), WithModules(modules)}
	img, err := Assemble(syntheticDebianBase(t, "amd64"), syntheticTree(t, time.Unix(1, 0), 0, false), l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	parsed := sbomOf(t, img, l, opts...)
	ours := map[string]bool{Libcrypt: true}
	for _, name := range lock.AllComponents() {
		if _, ok := l.Component(name); ok { // not the other choice of TLS library or zlib
			ours[name] = true
		}
	}
	seen := map[string]bool{}
	debs := 0
	for _, p := range parsed.Packages {
		switch {
		case ours[p.PackageName]:
			seen[p.PackageName] = true
			want := licenseOf(p.PackageName)
			if p.PackageLicenseDeclared != want || p.PackageLicenseConcluded != want {
				t.Errorf("%s: declared %q, concluded %q; want %q for both", p.PackageName, p.PackageLicenseDeclared, p.PackageLicenseConcluded, want)
			}
		case p.PackageName == "nginx-forge":
			if d := p.PackageLicenseDeclared; d == "NOASSERTION" || !strings.Contains(d, "GPL-2.0-only") || !strings.Contains(d, "LGPL-2.1-or-later") {
				t.Errorf("image package declares %q; want every compiled-in licence, zstd's and libcrypt's among them", d)
			}
		case strings.HasPrefix(string(p.PackageSPDXIdentifier), "Deb-"):
			debs++
		}
	}
	checkDebianLicenses(t, parsed, map[string]string{
		"base-files": "GPL-2.0-or-later",
		"libc6":      "LGPL-2.1-or-later AND LicenseRef-libc6-Carnegie AND (BSD-2-Clause OR GPL-2.0-only)",
		"libstdc++6": "NOASSERTION", // a free-form copyright file
		"tzdata":     "NOASSERTION", // no copyright file
	})
	for name := range ours {
		if !seen[name] {
			t.Errorf("the SBOM does not list %s (the lock has every component here and both modules are built)", name)
		}
	}
	if debs == 0 {
		t.Error("the SBOM lists no Debian package of the base")
	}
}

// checkDebianLicenses: each Debian package of doc declares want[name] and concludes nothing;
// a NOASSERTION says why in its licence comment, any other names the copyright file; every
// LicenseRef a declaration uses is defined in the document with the file's text.
func checkDebianLicenses(t *testing.T, doc *spdx.Document, want map[string]string) {
	t.Helper()
	defined := map[string]string{}
	for _, o := range doc.OtherLicenses {
		defined[o.LicenseIdentifier] = o.ExtractedText
	}
	seen := 0
	for _, p := range doc.Packages {
		if !strings.HasPrefix(string(p.PackageSPDXIdentifier), "Deb-") {
			continue
		}
		seen++
		w, ok := want[p.PackageName]
		if !ok {
			t.Errorf("unexpected Debian package %s", p.PackageName)
			continue
		}
		if p.PackageLicenseDeclared != w || p.PackageLicenseConcluded != "NOASSERTION" {
			t.Errorf("%s: declared %q, concluded %q; want %q and NOASSERTION", p.PackageName, p.PackageLicenseDeclared, p.PackageLicenseConcluded, w)
		}
		where := "/usr/share/doc/" + p.PackageName + "/copyright"
		if !strings.Contains(p.PackageLicenseComments, where) {
			t.Errorf("%s: licence comment %q does not name %s", p.PackageName, p.PackageLicenseComments, where)
		}
		for _, f := range strings.Fields(strings.NewReplacer("(", " ", ")", " ").Replace(p.PackageLicenseDeclared)) {
			if strings.HasPrefix(f, "LicenseRef-") && strings.TrimSpace(defined[f]) == "" {
				t.Errorf("%s declares %s, which the document does not define with a text", p.PackageName, f)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d Debian packages, want %d", seen, len(want))
	}
}
