package image

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
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

// SBOM returns the SPDX 2.3 JSON document describing img, an image made by Assemble from
// l: the image (by digest), nginx, OpenSSL, PCRE2, zlib and the components of the
// third-party modules compiled in (WithModules; version, download location, SHA-256 of the
// source tarball, licence, CPE 2.3 and purl), the static libcrypt when the image says it has
// one, the base image (name and digest from the image's annotations) and the Debian packages
// of the base, read from the dpkg database inside the image's layers. The CPEs and purls are
// what vulnerability scanners (grype, trivy) match advisories by: without them a scan of the
// SBOM finds nothing, even for a known-vulnerable OpenSSL. Pass it the options Assemble got:
// it refuses a component list that differs from the image's annotations. It is a pure
// function of its inputs: created is SOURCE_DATE_EPOCH, and the namespace is derived from
// the image digest.
func SBOM(img v1.Image, l *lock.Lock, opts ...Option) ([]byte, error) {
	o := resolve(l, opts)
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("computing image digest for the SBOM: %w", err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading image manifest for the SBOM: %w", err)
	}
	anns := m.Annotations
	if anns[annotationBaseDigest] == "" {
		return nil, fmt.Errorf("image %s has no %s annotation: SBOM only describes images made by Assemble", digest, annotationBaseDigest)
	}
	// What the image says about itself wins over options: the SBOM describes this image.
	o.libcrypt = anns[AnnotationPrefix+Libcrypt+".version"]
	o.optimize = anns[annotationOptimize]
	o.profile = anns[annotationProfile]
	if v := anns[annotationVersion]; v != "" {
		o.version = v
	}
	if s := anns[annotationSource]; s != "" {
		o.source = s
	}
	if err := checkModules(l, o); err != nil {
		return nil, fmt.Errorf("SBOM of image %s: %w", digest, err)
	}
	built := builtComponents(l, o)
	if err := matchAnnotations(anns, l, built); err != nil {
		return nil, fmt.Errorf("SBOM of image %s: %w", digest, err)
	}
	debs, osRelease, err := dpkgPackages(img)
	if err != nil {
		return nil, fmt.Errorf("SBOM of image %s: reading the base's Debian packages: %w", digest, err)
	}
	doc := sbomDocument(digest, l, o)
	doc.Relationships = []*spdx.Relationship{rel("DOCUMENT", common.TypeRelationshipDescribe, imageID)}
	addComponents(doc, built, o)
	if o.libcrypt != "" {
		addLibcrypt(doc, l, o.libcrypt)
	}
	if err := addBase(doc, anns, debs, osRelease); err != nil {
		return nil, err
	}
	if err := spdxlib.ValidateDocument(doc); err != nil {
		return nil, fmt.Errorf("SBOM of image %s is not a valid SPDX document: %w", digest, err)
	}
	var buf bytes.Buffer
	if err := spdxjson.Write(doc, &buf, spdxjson.Indent("  "), spdxjson.EscapeHTML(false)); err != nil {
		return nil, fmt.Errorf("writing the SBOM of image %s: %w", digest, err)
	}
	return buf.Bytes(), nil
}

// documentNamespace is the SBOM's unique URI: under the image's source repository, or,
// when none is known, under the SPDX specification's own default (spdx.org/spdxdocs), so
// that no document names a repository the image does not come from.
func documentNamespace(source string, digest v1.Hash) string {
	if source == "" {
		return "https://spdx.org/spdxdocs/nginx-forge-" + digest.Hex
	}
	return source + "/spdx/" + digest.Hex
}

// imageID is the SPDX element of the image itself.
const imageID = "Image"

// sbomDocument is the document with its creation info and the image's own package.
func sbomDocument(digest v1.Hash, l *lock.Lock, o options) *spdx.Document {
	created := time.Unix(*o.epoch, 0).UTC()
	return &spdx.Document{
		SPDXVersion:       spdx.Version,
		DataLicense:       spdx.DataLicense,
		SPDXIdentifier:    "DOCUMENT",
		DocumentName:      "nginx-forge-" + o.version,
		DocumentNamespace: documentNamespace(o.source, digest),
		CreationInfo: &spdx.CreationInfo{
			Created:        created.Format(time.RFC3339),
			Creators:       []spdx.Creator{{CreatorType: "Tool", Creator: "nginx-forge"}, {CreatorType: "Organization", Creator: "nginx-forge"}},
			CreatorComment: "created is the build's SOURCE_DATE_EPOCH, so the same inputs give the same document",
		},
		Packages: []*spdx.Package{{
			PackageSPDXIdentifier:   imageID,
			PackageName:             "nginx-forge",
			PackageVersion:          o.version,
			PackageDownloadLocation: "NOASSERTION",
			PackageChecksums:        []spdx.Checksum{{Algorithm: spdx.SHA256, Value: digest.Hex}},
			PackageLicenseConcluded: "NOASSERTION",
			PackageLicenseDeclared:  sbomLicenseExpression(l, o),
			PackageCopyrightText:    "NOASSERTION",
			PrimaryPackagePurpose:   "CONTAINER",
			PackageComment:          "the image manifest; checksum is its digest",
			PackageExternalReferences: []*spdx.PackageExternalReference{
				purlRef(ociPurl("nginx-forge", digest.String(), "")),
			},
		}},
	}
}

// addComponents adds the lock's components nginx is built from: nginx CONTAINED in the
// image, the others STATIC_LINKed into nginx.
func addComponents(doc *spdx.Document, built []lock.Component, o options) {
	for _, c := range built {
		id := componentID(c.Name)
		refs := []*spdx.PackageExternalReference{}
		// The component table's NVD vendor:product pairs (lock.Spec.CPE); a component NVD
		// has no product for carries the purl alone.
		spec, _ := lock.SpecOf(c.Name)
		for _, vp := range spec.CPE {
			refs = append(refs, cpeRef(vp[0], vp[1], c.Version))
		}
		refs = append(refs, purlRef(componentPurl(c)))
		where, sums := c.URL, []spdx.Checksum{{Algorithm: spdx.SHA256, Value: c.SHA256}}
		if c.Git != nil {
			// SPDX's VCS form; a commit has no file checksum (its tree is in the comment).
			where, sums = "git+"+c.Git.Repository+"@"+c.Git.Commit, nil
		}
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageSPDXIdentifier:     id,
			PackageName:               c.Name,
			PackageVersion:            c.Version,
			PackageDownloadLocation:   where,
			PackageChecksums:          sums,
			PackageLicenseConcluded:   licenseOr(c.Name),
			PackageLicenseDeclared:    licenseOr(c.Name),
			PackageLicenseComments:    licenseTextComment(c.Name),
			PackageCopyrightText:      "NOASSERTION",
			PrimaryPackagePurpose:     purpose(c.Name),
			PackageComment:            builtComment(c, o),
			PackageExternalReferences: refs,
		})
		if c.Name == lock.Nginx {
			doc.Relationships = append(doc.Relationships, rel(imageID, common.TypeRelationshipContains, id))
		} else {
			doc.Relationships = append(doc.Relationships, rel(componentID(lock.Nginx), common.TypeRelationshipStaticLink, id))
		}
	}
}

// builtComment is a component's comment: what vouches for its source, and for nginx how it
// was optimized.
func builtComment(c lock.Component, o options) string {
	comment := componentComment(c)
	if c.Name == lock.Nginx && o.optimize != "" {
		comment += "; built with optimization mode " + o.optimize + " (nginx-forge --optimize: none, lto = link-time optimization with the static libraries, pgo = lto plus profile-guided OpenSSL and nginx)"
	}
	switch {
	case c.Name != lock.Nginx || o.profile == "":
	case o.profile == ProfileTrained:
		comment += "; its PGO profile was trained during this build (not reproducible)"
	default:
		comment += "; PGO profile " + o.profile + " (recorded in the lock by ci pgo-profile)"
	}
	return comment
}

// licenseTextComment says where in the image a compiled-in component's licence text is.
func licenseTextComment(name string) string {
	return "the licence text is in the image under /" + plan.LicenseDir + "/" + name + "/"
}

// addLibcrypt adds the static libcrypt, STATIC_LINKed into nginx.
func addLibcrypt(doc *spdx.Document, l *lock.Lock, version string) {
	id := componentID(Libcrypt)
	// libcrypt.a comes from the builder's libcrypt-dev, so its version is a distribution
	// package version ("1:4.4.33-2"); the purl names libxcrypt at the upstream part, the
	// version its advisories are about. No CPE: NVD lists no product for libxcrypt that
	// this program could confirm (docs/verifying.md), and a guessed one would match
	// nothing or the wrong thing.
	up := debianUpstreamVersion(version)
	doc.Packages = append(doc.Packages, &spdx.Package{
		PackageSPDXIdentifier:   id,
		PackageName:             Libcrypt,
		PackageVersion:          version,
		PackageDownloadLocation: "NOASSERTION",
		PackageLicenseConcluded: libcryptLicense,
		PackageLicenseDeclared:  libcryptLicense,
		PackageLicenseComments:  licenseTextComment(Libcrypt) + " (the builder's " + plan.LibcryptPackage + " copyright file, and the LGPL 2.1 text it points to); the files of the static library are under the licences that file names: LGPL 2.1 or later overall, with BSD-3-Clause, BSD-2-Clause, 0BSD and public-domain parts",
		PackageCopyrightText:    "NOASSERTION",
		PrimaryPackagePurpose:   "LIBRARY",
		PackageComment:          "libxcrypt's libcrypt.a from the builder image's " + plan.LibcryptPackage + " package (" + l.Images.Builder.Pinned() + "), linked statically into nginx",
		PackageExternalReferences: []*spdx.PackageExternalReference{
			purlRef(packageurl.NewPackageURL(packageurl.TypeGeneric, "", "libxcrypt", up, nil, "").ToString()),
		},
	})
	doc.Relationships = append(doc.Relationships, rel(componentID(lock.Nginx), common.TypeRelationshipStaticLink, id))
}

// addBase adds the base image (the image DESCENDANT_OF it) and the Debian packages it
// CONTAINS, with the licences their copyright files declare.
func addBase(doc *spdx.Document, anns map[string]string, debs []debPackage, osr osRelease) error {
	baseName := anns[annotationBaseName]
	baseDigest := anns[annotationBaseDigest]
	bd, err := v1.NewHash(baseDigest)
	if err != nil {
		return fmt.Errorf("image annotation %s=%q: %w", annotationBaseDigest, baseDigest, err)
	}
	var baseRefs []*spdx.PackageExternalReference
	if baseName != "" {
		baseRefs = append(baseRefs, purlRef(ociPurl(repoBase(baseName), baseDigest, repoPath(baseName))))
	} else {
		// A base read from a local file (oci:DIR, docker-archive:FILE) has no
		// registry name: the package is named by its digest alone.
		baseName = "base image " + baseDigest
	}
	baseComment := "the base image; its Debian packages, read from its dpkg database, are the packages it CONTAINS"
	if len(debs) == 0 {
		baseComment = "the base image; it has no dpkg database (var/lib/dpkg/status or status.d), so no packages of it are listed"
	}
	doc.Packages = append(doc.Packages, &spdx.Package{
		PackageSPDXIdentifier:     "Base",
		PackageName:               baseName,
		PackageVersion:            baseDigest,
		PackageDownloadLocation:   "NOASSERTION",
		PackageChecksums:          []spdx.Checksum{{Algorithm: spdx.SHA256, Value: bd.Hex}},
		PackageLicenseConcluded:   "NOASSERTION",
		PackageLicenseDeclared:    "NOASSERTION",
		PackageCopyrightText:      "NOASSERTION",
		PrimaryPackagePurpose:     "CONTAINER",
		PackageComment:            baseComment,
		PackageExternalReferences: baseRefs,
	})
	doc.Relationships = append(doc.Relationships, rel(imageID, common.TypeRelationshipDescendantOf, "Base"))
	used := map[spdx.ElementID]bool{}
	defined := map[string]bool{}
	for _, d := range debs {
		id := debElementID(d, used)
		for _, ref := range d.license.refs {
			if !defined[ref.LicenseIdentifier] { // the same package for two architectures
				defined[ref.LicenseIdentifier] = true
				doc.OtherLicenses = append(doc.OtherLicenses, ref)
			}
		}
		doc.Packages = append(doc.Packages, &spdx.Package{
			PackageSPDXIdentifier:   id,
			PackageName:             d.name,
			PackageVersion:          d.version,
			PackageDownloadLocation: "NOASSERTION",
			PackageLicenseConcluded: "NOASSERTION",
			PackageLicenseDeclared:  d.license.expr,
			PackageLicenseComments:  d.license.comment,
			PackageCopyrightText:    "NOASSERTION",
			PrimaryPackagePurpose:   "OPERATING-SYSTEM",
			PackageSourceInfo:       "from the base image's dpkg database, " + d.file,
			PackageExternalReferences: []*spdx.PackageExternalReference{
				purlRef(d.purl(osr)),
			},
		})
		doc.Relationships = append(doc.Relationships, rel("Base", common.TypeRelationshipContains, id))
	}
	return nil
}

// cpe23 is the CPE 2.3 formatted string of an application. Characters other than letters,
// digits, '.', '_' and '-' are quoted with a backslash, as the formatted-string binding
// requires (a version such as "1.0.0+dfsg" would otherwise be read as two fields' worth of
// punctuation).
func cpe23(vendor, product, version string) string {
	q := func(s string) string {
		var b strings.Builder
		for _, r := range strings.ToLower(s) {
			if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		return b.String()
	}
	return "cpe:2.3:a:" + q(vendor) + ":" + q(product) + ":" + q(version) + ":*:*:*:*:*:*:*"
}

// componentID is the SPDX element ID of a compiled component: SPDX IDs allow letters, digits,
// '.' and '-' only, so ngx_brotli is Package-ngx-brotli.
func componentID(name string) spdx.ElementID {
	return spdx.ElementID("Package-" + spdxIDChars.ReplaceAllString(name, "-"))
}

func cpeRef(vendor, product, version string) *spdx.PackageExternalReference {
	return &spdx.PackageExternalReference{Category: common.CategorySecurity, RefType: common.TypeSecurityCPE23Type, Locator: cpe23(vendor, product, version)}
}

func purlRef(locator string) *spdx.PackageExternalReference {
	return &spdx.PackageExternalReference{Category: common.CategoryPackageManager, RefType: common.TypePackageManagerPURL, Locator: locator}
}

func rel(a spdx.ElementID, kind string, b spdx.ElementID) *spdx.Relationship {
	return &spdx.Relationship{RefA: common.MakeDocElementID("", string(a)), RefB: common.MakeDocElementID("", string(b)), Relationship: kind}
}

// componentComment says what vouches for a component's source: always its checksum, and its
// upstream PGP signature when the lock pins one (the build refuses to start unless it
// verifies); for an unsigned component, the lock's reason, so whoever reads the SBOM sees that
// the tarball rests on its checksum alone and why.
func componentComment(c lock.Component) string {
	if c.Git != nil {
		return "source pinned by git commit " + c.Git.Commit + " of " + c.Git.Repository + " (tag " + c.Git.Tag + "); the build verified that the files it compiled hash to that commit's tree " + c.Git.Tree + "; NO PGP signature (unsigned: " + c.Unsigned + ")"
	}
	msg := "checksum is the SHA-256 of the source tarball at downloadLocation, verified before the build"
	switch {
	case c.Signature != nil:
		return msg + "; so was its upstream PGP signature " + c.Signature.URL + ", by one of the signers the lock pins: " + strings.Join(c.Signature.Fingerprints, ", ")
	case c.Unsigned != "":
		return msg + "; NO PGP signature (unsigned: " + c.Unsigned + ")"
	default:
		return msg + "; NO PGP signature, and the lock gives no reason"
	}
}

func purpose(n string) string {
	if n == lock.Nginx {
		return "APPLICATION"
	}
	return "LIBRARY"
}

// ociPurl is the package URL of an OCI image: pkg:oci/NAME@DIGEST?repository_url=REPO.
func ociPurl(nameStr, digest, repo string) string {
	p := "pkg:oci/" + nameStr + "@" + url.PathEscape(digest)
	if repo != "" {
		p += "?repository_url=" + url.QueryEscape(repo)
	}
	return p
}

// OCIPurl is the package URL of the image ref (REPO[:TAG][@DIGEST]) pulled at digest, as the
// SBOM names its base: pkg:oci/NAME@DIGEST?repository_url=REPO. The build pipeline gives
// the provenance (pipeline/sign) its images named the same way.
func OCIPurl(ref, digest string) string {
	ref, _, _ = strings.Cut(ref, "@")
	return ociPurl(repoBase(ref), digest, repoPath(ref))
}

// repoPath strips the tag from "gcr.io/distroless/base-nossl-debian13:nonroot".
func repoPath(ref string) string {
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i]
	}
	return ref
}

// repoBase is the last path element of the repository.
func repoBase(ref string) string {
	r := repoPath(ref)
	return r[strings.LastIndex(r, "/")+1:]
}

// componentPurl is a component's package URL: pkg:github/OWNER/REPO@TAG for a git source
// (what GitHub's advisory database and scanners match), else pkg:generic with the tarball's
// URL and checksum.
func componentPurl(c lock.Component) string {
	if g := c.Git; g != nil {
		if u, err := url.Parse(g.Repository); err == nil && u.Host == "github.com" {
			parts := strings.Split(strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/"), "/")
			if len(parts) == 2 {
				tag := g.Tag
				if tag == "" {
					tag = g.Commit
				}
				return packageurl.NewPackageURL(packageurl.TypeGithub, parts[0], parts[1], tag, nil, "").ToString()
			}
		}
		return packageurl.NewPackageURL(packageurl.TypeGeneric, "", c.Name, c.Version,
			packageurl.QualifiersFromMap(map[string]string{"vcs_url": "git+" + g.Repository + "@" + g.Commit}), "").ToString()
	}
	return packageurl.NewPackageURL(packageurl.TypeGeneric, "", c.Name, c.Version,
		packageurl.QualifiersFromMap(map[string]string{"download_url": c.URL, "checksum": "sha256:" + c.SHA256}), "").ToString()
}
