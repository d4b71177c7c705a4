package image

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
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
	doc, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	var parsed spdxDocument
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	comments := map[string]string{}
	for _, p := range parsed.Packages {
		comments[p.Name] = p.Comment
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
	doc, err := SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	var parsed spdxDocument
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	pkgs := map[string]spdxPackage{}
	for _, p := range parsed.Packages {
		pkgs[p.Name] = p
	}
	links := map[string]bool{}
	for _, r := range parsed.Relationships {
		if r.SPDXElementID == "SPDXRef-Package-nginx" && r.RelationshipType == "STATIC_LINK" {
			links[r.RelatedSPDXElement] = true
		}
	}
	for name, license := range map[string]string{lock.Brotli: "MIT", lock.NgxBrotli: "BSD-2-Clause"} {
		p, ok := pkgs[name]
		if !ok {
			t.Errorf("SBOM does not list %s", name)
			continue
		}
		c := l.MustComponent(name)
		if p.VersionInfo != c.Version || p.Checksums[0].ChecksumValue != c.SHA256 || p.LicenseDeclared != license {
			t.Errorf("%s: version %q checksum %v license %q; want the lock's and %s", name, p.VersionInfo, p.Checksums, p.LicenseDeclared, license)
		}
		if !links[p.SPDXID] {
			t.Errorf("%s is not STATIC_LINK of nginx", name)
		}
	}
	if _, ok := pkgs[lock.Zstd]; ok {
		t.Error("SBOM lists zstd, which the test lock pins without its module (so nothing links it)")
	}
	if img := pkgs["nginx-forge"].LicenseDeclared; !strings.Contains(img, "MIT") {
		t.Errorf("image license %q leaves out brotli's MIT", img)
	}
}
