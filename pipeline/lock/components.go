package lock

import "regexp"

// The component table: every fact about a component that more than one package needs, in
// one row per component. lock (order, roles, requirements), plan (modules, licence files),
// upstream (repository, tag rule, signature), image (CPEs, licences) and smoke (what a
// module must answer) read it; none keeps its own per-component map
// (pipeline/internal/importrules' TestNoPerComponentMaps). It lives in lock, the bottom
// package all of them already import, so the table adds no import arrow.
//
// What it does not hold, and why: the stage scripts (build logic, chosen by component name
// in plan's stage code), the purl (derived from the lock entry's pin by image), and the
// signer keys (pipeline/lock/keys, one file per fingerprint; the lock entry names them).

// Kind is the part a component plays in the build.
type Kind int

const (
	// kindNginx is nginx itself.
	kindNginx Kind = iota + 1
	// KindTLS is a TLS library; a lock holds exactly one (TLSLibraries).
	KindTLS
	// KindZlib is a zlib implementation; a lock holds exactly one (ZlibLibraries).
	KindZlib
	// kindPCRE is the regular expression library.
	kindPCRE
	// KindModule is a third-party nginx module, compiled in statically.
	KindModule
	// kindLibrary is a library a third-party module links.
	kindLibrary
)

// Spec is one component's row.
type Spec struct {
	// Name is the lock's component name. Underscores, not dashes: stage names become
	// DEP_<NAME> variables (FlagName is the spelling flags and tags use).
	Name string
	Kind Kind
	// Optional components (modules and their libraries) may be left out of a lock.
	Optional bool

	// GitHub is the upstream repository, "owner/name".
	GitHub string
	// Tag matches a final release's tag and captures its version. The patterns are
	// anchored and take digits and dots only, so pre-release tags (openssl-3.6.0-beta1,
	// pcre2-10.45-RC1), old-style tags (OpenSSL_1_1_1w) and anything odd never match.
	Tag *regexp.Regexp
	// TagsOnly: the releases are git tags, and the lock pins GitHub's archive of the tag, so
	// the release objects (and their draft and pre-release flags) are not read.
	TagsOnly bool
	// TopDir is the name a release tarball's top directory starts with, "<TopDir>-<version>/",
	// when it is not Name (GitHub names an archive's directory after the repository).
	TopDir string
	// SignatureSuffix is the name upstream gives a release's detached signature, appended
	// to the tarball's URL; "" when upstream publishes none (a new release stays unsigned).
	// The keys allowed to have made it are the lock entry's fingerprints, vendored under
	// KeysDir.
	SignatureSuffix string
	// StaysOnBranch: without a track in its lock entry, the update keeps the component on
	// its pinned release branch (moving to another branch is a deliberate edit); otherwise
	// it follows the latest release. The tracks' meanings ("stable" for nginx, "lts" for
	// OpenSSL) are upstream's policy code.
	StaysOnBranch bool

	// License is the SPDX licence expression of what is compiled in, read from
	// LicenseFiles: the SBOM's declared and concluded licence and the image's licenses
	// annotation. A change of licence upstream is a change here in the same update.
	License string
	// LicenseFiles are the source tree's licence files, installed as
	// /usr/share/licenses/<Name>/<file>. Each inner list is alternatives, the first present
	// taken; a source without any of them fails its stage.
	LicenseFiles [][]string
	// CPE are the NVD vendor:product pairs NVD's CVE records (and so grype's and trivy's
	// CPE matching) use; none when NVD has no product (the SBOM then carries the purl alone).
	CPE [][2]string

	// Module is the --modules name of a third-party module ("" for anything else), and
	// ConfigureFlag, Conf and Summary its plan.Module fields: the configure flag (a relative
	// path, where the nginx stage copies the source: nginx -V prints it), the file under
	// files/ that turns it on, and one line for `ci modules`.
	Module        string
	ConfigureFlag string
	Conf          string
	Summary       string
	// Requires are the components this one cannot be built without (a module's library).
	Requires []string
	// Encoding is the content-coding a module serves; the smoke suite requires responses in
	// it from an image built with the module, and none from one without.
	Encoding string
}

// semver is the tag rule of upstreams that tag "v1.2.3".
var semver = regexp.MustCompile(`^v([0-9]+\.[0-9]+\.[0-9]+)$`)

// specs is the table, in build and write order: the core components first (a lock has
// nginx, PCRE2, one TLS library and one zlib), then the optional ones.
var specs = []Spec{
	{Name: Zlib, Kind: KindZlib,
		GitHub: "madler/zlib", Tag: regexp.MustCompile(`^v([0-9]+\.[0-9]+(?:\.[0-9]+){0,2})$`), SignatureSuffix: ".asc",
		// LICENSE (README before 1.2.13): the zlib licence.
		License: "Zlib", LicenseFiles: [][]string{{"LICENSE", "README"}},
		CPE: [][2]string{{"zlib", "zlib"}}},
	// zlib-ng in its zlib-compatible mode: zlib's API (what nginx's gzip module calls) over
	// SIMD deflate. A lock holds it instead of zlib.
	{Name: ZlibNG, Kind: KindZlib,
		// zlib-ng's releases are bare "2.2.2" tags; its repository also carries zlib's
		// history, whose "v1.2.11"-style tags are zlib's releases and must never match.
		GitHub: "zlib-ng/zlib-ng", Tag: regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)$`),
		// LICENSE.md: the zlib licence (zlib-ng keeps zlib's).
		License: "Zlib", LicenseFiles: [][]string{{"LICENSE.md"}}},
	{Name: PCRE2, Kind: kindPCRE,
		GitHub: "PCRE2Project/pcre2", Tag: regexp.MustCompile(`^pcre2-([0-9]+\.[0-9]+)$`), SignatureSuffix: ".sig",
		// LICENCE.md (LICENCE before 10.45): "BSD" with one exemption for binary
		// library-like packages (the binary-redistribution clause does not reach software
		// that merely includes such a package); LICENCE.md names this expression itself,
		// and PCRE2-exception is in the SPDX license list since 3.23.
		License: "BSD-3-Clause WITH PCRE2-exception", LicenseFiles: [][]string{{"LICENCE.md", "LICENCE"}},
		CPE: [][2]string{{"pcre", "pcre2"}}},
	// OpenSSL is the default TLS library.
	{Name: OpenSSL, Kind: KindTLS,
		GitHub: "openssl/openssl", Tag: regexp.MustCompile(`^openssl-([0-9]+\.[0-9]+\.[0-9]+)$`), SignatureSuffix: ".asc", StaysOnBranch: true,
		// LICENSE.txt: the Apache License 2.0, OpenSSL's licence since 3.0.
		License: "Apache-2.0", LicenseFiles: [][]string{{"LICENSE.txt", "LICENSE"}},
		CPE: [][2]string{{"openssl", "openssl"}}},
	{Name: AWSLC, Kind: KindTLS,
		// AWS-LC's releases are "v5.5.0"; its FIPS branch ("AWS-LC-FIPS-3.3.0") is another line.
		GitHub: "aws/aws-lc", Tag: semver,
		// LICENSE: AWS-LC's own files are Apache-2.0 OR ISC; it also keeps BoringSSL's ISC
		// and Apache-2.0 code, OpenSSL-derived files (Apache-2.0, SSLeay notices), the
		// ML-KEM/ML-DSA code (Apache-2.0 OR ISC OR MIT), and MIT, MIT-0 and BSD-3-Clause
		// third-party parts, each named in that file by its SPDX identifier. Together,
		// conservatively: all of them.
		License: "Apache-2.0 AND ISC AND MIT AND BSD-3-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		// AWS-LC's CVE records come from AWS's own CNA under aws:aws-lc (e.g. CVE-2026-4428).
		CPE: [][2]string{{"aws", "aws-lc"}}},
	{Name: Nginx, Kind: kindNginx,
		GitHub: "nginx/nginx", Tag: regexp.MustCompile(`^release-([0-9]+\.[0-9]+\.[0-9]+)$`), SignatureSuffix: ".asc", StaysOnBranch: true,
		// LICENSE: the two-clause BSD licence of Igor Sysoev and Nginx, Inc.
		License: "BSD-2-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		// NVD moved nginx from nginx:nginx to f5:nginx in 2022; older advisories keep the
		// old name, so both.
		CPE: [][2]string{{"f5", "nginx"}, {"nginx", "nginx"}}},

	// google/brotli, the library ngx_brotli compresses with. No signatures upstream.
	{Name: Brotli, Kind: kindLibrary, Optional: true,
		GitHub: "google/brotli", Tag: semver,
		// LICENSE: the MIT licence.
		License: "MIT", LicenseFiles: [][]string{{"LICENSE"}},
		CPE: [][2]string{{"google", "brotli"}}},
	// google/ngx_brotli, the brotli filter and brotli_static modules. No NVD product.
	{Name: NgxBrotli, Kind: KindModule, Optional: true,
		// Its only release is the tag v1.0.0rc, so its rule alone takes an "rc" suffix (a
		// later final release still sorts above it).
		GitHub: "google/ngx_brotli", Tag: regexp.MustCompile(`^v([0-9]+\.[0-9]+\.[0-9]+(?:rc(?:[1-9][0-9]*)?)?)$`), TagsOnly: true,
		// LICENSE: nginx's two-clause BSD text, with Google added.
		License: "BSD-2-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		Module: "brotli", ConfigureFlag: "--add-module=../ngx_brotli", Conf: "compression.d/brotli.conf",
		Summary:  "brotli compression of responses and .br files (ngx_brotli)",
		Requires: []string{Brotli}, Encoding: "br"},
	// facebook/zstd, the library the zstd module compresses with.
	{Name: Zstd, Kind: kindLibrary, Optional: true,
		GitHub: "facebook/zstd", Tag: semver, SignatureSuffix: ".sig",
		// LICENSE (three-clause BSD) and COPYING (GPL version 2, without "or any later
		// version"); its README: "dual-licensed under BSD OR GPLv2", the recipient's
		// choice. The image ships both texts.
		License: "BSD-3-Clause OR GPL-2.0-only", LicenseFiles: [][]string{{"LICENSE"}, {"COPYING"}},
		CPE: [][2]string{{"facebook", "zstandard"}}},
	// tokers/zstd-nginx-module, the zstd filter and zstd_static modules. No NVD product,
	// no signatures.
	{Name: ZstdNginxModule, Kind: KindModule, Optional: true,
		GitHub: "tokers/zstd-nginx-module", Tag: regexp.MustCompile(`^v?([0-9]+\.[0-9]+\.[0-9]+)$`), TagsOnly: true, TopDir: "zstd-nginx-module",
		// LICENSE: "BSD 2-Clause License".
		License: "BSD-2-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		Module: "zstd", ConfigureFlag: "--add-module=../zstd_nginx_module", Conf: "compression.d/zstd.conf",
		Summary:  "zstd compression of responses and .zst files (zstd-nginx-module)",
		Requires: []string{Zstd}, Encoding: "zstd"},
	// maxmind/libmaxminddb, the reader of MaxMind DB files the geoip2 module links. No
	// signatures upstream; no NVD product.
	{Name: Libmaxminddb, Kind: kindLibrary, Optional: true,
		GitHub: "maxmind/libmaxminddb", Tag: regexp.MustCompile(`^([0-9]+\.[0-9]+\.[0-9]+)$`),
		// LICENSE: the Apache License 2.0 (NOTICE names MaxMind's copyright).
		License: "Apache-2.0", LicenseFiles: [][]string{{"LICENSE"}, {"NOTICE"}}},
	// leev/ngx_http_geoip2_module: variables (a country, a city...) looked up in a MaxMind
	// DB by the client's address or any variable. No signatures, no NVD product. It ships no
	// configuration: the database is the user's to mount (docs/using.md says where).
	{Name: NgxGeoIP2, Kind: KindModule, Optional: true,
		GitHub: "leev/ngx_http_geoip2_module", Tag: regexp.MustCompile(`^([0-9]+\.[0-9]+)$`), TagsOnly: true, TopDir: "ngx_http_geoip2_module",
		// LICENSE: the two-clause BSD licence of Lee Valentine.
		License: "BSD-2-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		Module: "geoip2", ConfigureFlag: "--add-module=../ngx_http_geoip2_module",
		Summary:  "variables from a MaxMind GeoIP2/GeoLite2 database you mount (geoip2 {}), for http and stream",
		Requires: []string{Libmaxminddb}},
	// openresty/echo-nginx-module: responses written by directives (echo, echo_location,
	// echo_sleep...), for tests and simple endpoints. No signatures, no NVD product.
	{Name: ngxEcho, Kind: KindModule, Optional: true,
		GitHub: "openresty/echo-nginx-module", Tag: regexp.MustCompile(`^v([0-9]+\.[0-9]+)$`), TagsOnly: true, TopDir: "echo-nginx-module",
		// LICENSE: the two-clause BSD licence of Yichun Zhang.
		License: "BSD-2-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		Module: "echo", ConfigureFlag: "--add-module=../echo_nginx_module",
		Summary: "responses written by directives (echo, echo_location, echo_sleep...)"},
	// aperezdc/ngx-fancyindex: directory listings in HTML with a header, footer and sorting
	// (fancyindex on). No signatures, no NVD product.
	{Name: ngxFancyindex, Kind: KindModule, Optional: true,
		GitHub: "aperezdc/ngx-fancyindex", Tag: regexp.MustCompile(`^v([0-9]+\.[0-9]+\.[0-9]+)$`), TagsOnly: true, TopDir: "ngx-fancyindex",
		// LICENSE: the two-clause BSD licence.
		License: "BSD-2-Clause", LicenseFiles: [][]string{{"LICENSE"}},
		Module: "fancyindex", ConfigureFlag: "--add-module=../ngx_fancyindex",
		Summary: "directory listings in HTML with header, footer and sorting (fancyindex)"},
}

// Specs is the component table, in build and write order.
func Specs() []Spec { return append([]Spec(nil), specs...) }

// SpecOf is component name's row, or false for a name the table does not have.
func SpecOf(name string) (Spec, bool) {
	for _, s := range specs {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// namesWhere lists the table's names whose row satisfies keep, in table order.
func namesWhere(keep func(Spec) bool) []string {
	var out []string
	for _, s := range specs {
		if keep(s) {
			out = append(out, s.Name)
		}
	}
	return out
}
