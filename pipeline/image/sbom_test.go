package image

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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
	parsed := sbomOf(t, img, l)
	pkgs := packagesByName(parsed)
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
				related[r.RelatedSPDXElement] = true
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
				if inSBOM != tc.listed || related["SPDXRef-Package-"+name] != tc.listed || annotated != tc.listed || inHistory != tc.listed {
					t.Errorf("%s: in SBOM %v, related %v, annotated %v, in history %v; want all %v (modules %s)",
						name, inSBOM, related["SPDXRef-Package-"+name], annotated, inHistory, tc.listed, strings.Join(tc.modules, ","))
				}
			}
			for _, lic := range []string{pkgs["nginx-forge"].LicenseDeclared, m.Annotations[AnnotationLicenses]} {
				if strings.Contains(lic, "MIT") != tc.listed {
					t.Errorf("licence %q: brotli's MIT present = %v, want %v", lic, !tc.listed, tc.listed)
				}
			}
			for _, name := range lock.ComponentOrder {
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
		if got := m.Annotations[AnnotationProfile]; got != tc.profile {
			t.Errorf("annotation %s = %q, want %q", AnnotationProfile, got, tc.profile)
		}
		parsed := sbomOf(t, img, l, opts...)
		for _, p := range parsed.Packages {
			if p.Name != lock.Nginx {
				continue
			}
			if tc.want == "" && strings.Contains(p.Comment, "PGO profile") || !strings.Contains(p.Comment, tc.want) {
				t.Errorf("profile %q: nginx comment %q, want %q", tc.profile, p.Comment, tc.want)
			}
		}
	}
}

// sbomOf is SBOM(img, l, opts...) parsed.
func sbomOf(t *testing.T, img v1.Image, l *lock.Lock, opts ...Option) spdxDocument {
	t.Helper()
	doc, err := SBOM(img, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	var parsed spdxDocument
	if err := json.Unmarshal(doc, &parsed); err != nil {
		t.Fatal(err)
	}
	return parsed
}

func packagesByName(doc spdxDocument) map[string]spdxPackage {
	pkgs := map[string]spdxPackage{}
	for _, p := range doc.Packages {
		pkgs[p.Name] = p
	}
	return pkgs
}
