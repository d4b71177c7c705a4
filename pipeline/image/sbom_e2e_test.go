//go:build integration

package image_test

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	spdxjson "github.com/spdx/tools-golang/json"
	"github.com/spdx/tools-golang/spdx"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The SBOM of the real image (the stack the host executor built from the test lock, on the
// stand-in distroless base) keeps its promises: every package statically linked into nginx
// has a licence identifier and its licence text in the image's own layer under
// /usr/share/licenses/<name>/ (libcrypt's being the builder's libcrypt-dev copyright file,
// byte for byte, and the LGPL 2.1); every Debian package of the base, whose copyright files
// are all machine-readable, declares a licence read from its file, each LicenseRef defined
// with a text.
func TestSBOMOfTheBuiltImage(t *testing.T) {
	tree := testenv.BuiltTree(t)
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	base, _ := basetest.For(t, basetest.Options{Arch: "amd64"})
	opts := []image.Option{image.WithBaseRef(basetest.Name), image.WithLibcrypt(hostPackageVersion(t, plan.LibcryptPackage))}
	img, err := image.Assemble(base, tree, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := image.SBOM(img, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := spdxjson.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	licences := nginxLayerLicenses(t, img)
	linked := staticallyLinked(doc)
	if !linked[image.Libcrypt] || !linked[lock.OpenSSL] || len(linked) < 4 {
		t.Fatalf("the SBOM links %v into nginx; want libcrypt, OpenSSL, PCRE2 and zlib at least", linked)
	}
	for _, p := range doc.Packages {
		if p.PackageName != lock.Nginx && !linked[p.PackageName] {
			continue
		}
		if d := p.PackageLicenseDeclared; d == "" || d == "NOASSERTION" || p.PackageLicenseConcluded != d {
			t.Errorf("%s: declared %q, concluded %q; want its licence in both", p.PackageName, d, p.PackageLicenseConcluded)
		}
		if len(licences[p.PackageName]) == 0 {
			t.Errorf("%s (%s) has no licence text under /%s/%s/ in the image's nginx layer", p.PackageName, p.PackageLicenseDeclared, plan.LicenseDir, p.PackageName)
		}
	}
	host, err := os.ReadFile("/usr/share/doc/" + plan.LibcryptPackage + "/copyright")
	if err != nil {
		t.Fatal(err)
	}
	if got := licences[image.Libcrypt]["copyright"]; !bytes.Equal(got, host) || !bytes.Contains(licences[image.Libcrypt]["LGPL-2.1"], []byte("GNU LESSER GENERAL PUBLIC LICENSE")) {
		t.Errorf("libcrypt's licence in the image: copyright %d bytes (the builder's: %d), LGPL-2.1 %d bytes", len(got), len(host), len(licences[image.Libcrypt]["LGPL-2.1"]))
	}
	checkBaseLicenses(t, doc)
}

// checkBaseLicenses: each Debian package of the base declares a licence (their copyright
// files are DEP-5), and each LicenseRef it uses is defined with a text.
func checkBaseLicenses(t *testing.T, doc *spdx.Document) {
	t.Helper()
	defined := map[string]bool{}
	for _, o := range doc.OtherLicenses {
		defined[o.LicenseIdentifier] = strings.TrimSpace(o.ExtractedText) != ""
	}
	debs := 0
	for _, p := range doc.Packages {
		if !strings.HasPrefix(string(p.PackageSPDXIdentifier), "Deb-") {
			continue
		}
		debs++
		t.Logf("%s: %s", p.PackageName, p.PackageLicenseDeclared)
		if p.PackageLicenseDeclared == "NOASSERTION" || !strings.Contains(p.PackageLicenseComments, "(DEP-5)") {
			t.Errorf("%s declares %q (%s); its copyright file is DEP-5", p.PackageName, p.PackageLicenseDeclared, p.PackageLicenseComments)
		}
		for _, f := range strings.Fields(strings.NewReplacer("(", " ", ")", " ").Replace(p.PackageLicenseDeclared)) {
			if strings.HasPrefix(f, "LicenseRef-") && !defined[f] {
				t.Errorf("%s uses %s, which the SBOM does not define with a text", p.PackageName, f)
			}
		}
	}
	if debs != len(basetest.Packages) {
		t.Errorf("the SBOM lists %d Debian packages, want %d (%v)", debs, len(basetest.Packages), basetest.Packages)
	}
}

// staticallyLinked are the names of the packages the SBOM says nginx STATIC_LINKs.
func staticallyLinked(doc *spdx.Document) map[string]bool {
	names := map[spdx.ElementID]string{}
	for _, p := range doc.Packages {
		names[p.PackageSPDXIdentifier] = p.PackageName
	}
	out := map[string]bool{}
	for _, r := range doc.Relationships {
		if r.Relationship == "STATIC_LINK" && names[r.RefA.ElementRefID] == lock.Nginx {
			out[names[r.RefB.ElementRefID]] = true
		}
	}
	return out
}

// nginxLayerLicenses reads usr/share/licenses/<component>/<file> of the image's last layer
// (the one this project makes): component -> file name -> content.
func nginxLayerLicenses(t *testing.T, img v1.Image) map[string]map[string][]byte {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	out := map[string]map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(strings.TrimPrefix(h.Name, "/"), plan.LicenseDir+"/")
		component, file, nested := strings.Cut(rest, "/")
		if !ok || !nested || h.Typeflag != tar.TypeReg || h.Size < 100 {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if out[component] == nil {
			out[component] = map[string][]byte{}
		}
		out[component][file] = b
	}
}
