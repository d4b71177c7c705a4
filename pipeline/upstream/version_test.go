package upstream

import (
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // "" means an error
	}{
		{"1.26.3", "1.26.3"},
		{"10.46", "10.46"},
		{"1.2.11.1", "1.2.11.1"},
		{"3.6.0-beta1", ""},
		{"10.45-RC1", ""},
		{"1", ""},
		{"1..2", ""},
		{"01.2", ""},
		{"1.2.3.4.5", ""},
		{"v1.3", ""},
		{"", ""},
		// Release candidates, as the lock allows them (ngx_brotli's only release).
		{"1.0.0rc", "1.0.0rc"},
		{"1.0.0rc2", "1.0.0rc2"},
		{"1.0.0rc0", ""},
		{"1.0.0rc02", ""},
		{"1.0.0-rc1", ""},
		{"1.0.0rcx", ""},
		{"rc1", ""},
		// The lock's rule (lock.CheckVersion): a part the lock refuses is no version here either.
		{"1.1234567890", ""},
		{"1.123456789", "1.123456789"},
	} {
		v, err := parseVersion(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("ParseVersion(%q) = %v, want an error", tc.in, v)
			}
			continue
		}
		if err != nil || v.String() != tc.want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %s", tc.in, v, err, tc.want)
		}
	}
}

func TestCompare(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.26.3", "1.26.10", -1},
		{"1.28.0", "1.26.9", 1},
		{"1.3", "1.3.0", 0},
		{"1.3.1", "1.3", 1},
		{"10.46", "10.5", 1},
		// A release candidate comes before its release and after the release before it.
		{"1.0.0rc", "1.0.0", -1},
		{"1.0.0rc2", "1.0.0", -1},
		{"0.9.9", "1.0.0rc", -1},
		{"1.0.0rc", "1.0.0rc1", -1},
		{"1.0.0rc2", "1.0.0rc1", 1},
		{"1.0.0rc", "1.0.0rc", 0},
	} {
		a, err := parseVersion(tc.a)
		if err != nil {
			t.Fatal(err)
		}
		b, err := parseVersion(tc.b)
		if err != nil {
			t.Fatal(err)
		}
		if got := a.Compare(b); got != tc.want {
			t.Errorf("%s vs %s = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestVersionFromTag(t *testing.T) {
	for _, tc := range []struct {
		component, tag, want string // want "" = not a release
	}{
		{lock.Nginx, "release-1.26.3", "1.26.3"},
		{lock.Nginx, "release-1.26", ""},
		{lock.Nginx, "before-1.0-branch", ""},
		{lock.Nginx, "1.26.3", ""},
		{lock.OpenSSL, "openssl-3.5.7", "3.5.7"},
		{lock.OpenSSL, "openssl-3.6.0-beta1", ""},
		{lock.OpenSSL, "openssl-3.5.0-rc1", ""},
		{lock.OpenSSL, "OpenSSL_1_1_1w", ""},
		{lock.OpenSSL, "OpenSSL-fips-2_0_16", ""},
		{lock.PCRE2, "pcre2-10.46", "10.46"},
		{lock.PCRE2, "pcre2-10.46-RC1", ""},
		{lock.PCRE2, "pcre-8.45", ""},
		{lock.Zlib, "v1.3.1", "1.3.1"},
		{lock.Zlib, "v1.3", "1.3"},
		{lock.Zlib, "v1.2.11.1-motley", ""},
		{lock.Zlib, "1.2.8-develop", ""},
		{lock.Brotli, "v1.1.0", "1.1.0"},
		{lock.Brotli, "v1.1.0rc", ""},
		{lock.Brotli, "1.1.0", ""},
		{lock.NgxBrotli, "v1.0.0rc", "1.0.0rc"},
		{lock.NgxBrotli, "v1.0.0", "1.0.0"},
		{lock.NgxBrotli, "v1.0.0-rc", ""},
		{lock.Zstd, "v1.5.7", "1.5.7"},
		{lock.Zstd, "zstd-1.5.7", ""},
		{lock.Zstd, "v1.5.7-kernel", ""},
		{lock.ZstdNginxModule, "0.1.1", "0.1.1"},
		{lock.ZstdNginxModule, "v0.1.1", "0.1.1"},
		{lock.ZstdNginxModule, "0.1.1-beta", ""},
		{"unknown", "v1.0", ""},
	} {
		v, ok := versionFromTag(tc.component, tc.tag)
		got := ""
		if ok {
			got = v.String()
		}
		if got != tc.want {
			t.Errorf("VersionFromTag(%s, %q) = %q, want %q", tc.component, tc.tag, got, tc.want)
		}
	}
}

func TestBump(t *testing.T) {
	for _, tc := range []struct {
		name, url, sig, old, new, wantURL, wantSig, wantErr string
	}{
		{name: "openssl", old: "3.5.7", new: "3.5.8",
			url:     "https://github.com/openssl/openssl/releases/download/openssl-3.5.7/openssl-3.5.7.tar.gz",
			sig:     "https://github.com/openssl/openssl/releases/download/openssl-3.5.7/openssl-3.5.7.tar.gz.asc",
			wantURL: "https://github.com/openssl/openssl/releases/download/openssl-3.5.8/openssl-3.5.8.tar.gz",
			wantSig: "https://github.com/openssl/openssl/releases/download/openssl-3.5.8/openssl-3.5.8.tar.gz.asc"},
		{name: "nginx", old: "1.26.2", new: "1.26.3",
			url: "https://nginx.org/download/nginx-1.26.2.tar.gz", wantURL: "https://nginx.org/download/nginx-1.26.3.tar.gz"},
		// 1.3 inside 1.3.1 or 10.4 inside 10.44 is not the version.
		{name: "zlib", old: "1.3", new: "1.3.1",
			url: "https://github.com/madler/zlib/releases/download/v1.3/zlib-1.3.tar.gz", wantURL: "https://github.com/madler/zlib/releases/download/v1.3.1/zlib-1.3.1.tar.gz"},
		{name: "pcre2", old: "10.4", new: "10.5",
			url: "https://example.org/pcre2-10.44/pcre2-10.4.tar.gz", wantURL: "https://example.org/pcre2-10.44/pcre2-10.5.tar.gz"},
		{name: "zlib", old: "1.3.1", new: "1.3.2",
			url: "https://example.org/zlib/latest.tar.gz", wantErr: "does not contain version 1.3.1"},
		// The URLs a lock with the optional components pins upstream: GitHub archives of a
		// tag (brotli, the modules) and zstd's signed release assets.
		{name: "brotli", old: "1.1.0", new: "1.2.0",
			url: "https://github.com/google/brotli/archive/refs/tags/v1.1.0.tar.gz", wantURL: "https://github.com/google/brotli/archive/refs/tags/v1.2.0.tar.gz"},
		{name: "ngx_brotli", old: "1.0.0rc", new: "1.0.0",
			url: "https://github.com/google/ngx_brotli/archive/refs/tags/v1.0.0rc.tar.gz", wantURL: "https://github.com/google/ngx_brotli/archive/refs/tags/v1.0.0.tar.gz"},
		{name: "zstd", old: "1.5.6", new: "1.5.7",
			url:     "https://github.com/facebook/zstd/releases/download/v1.5.6/zstd-1.5.6.tar.gz",
			sig:     "https://github.com/facebook/zstd/releases/download/v1.5.6/zstd-1.5.6.tar.gz.sig",
			wantURL: "https://github.com/facebook/zstd/releases/download/v1.5.7/zstd-1.5.7.tar.gz",
			wantSig: "https://github.com/facebook/zstd/releases/download/v1.5.7/zstd-1.5.7.tar.gz.sig"},
		{name: "zstd_nginx_module", old: "0.1.0", new: "0.1.1",
			url: "https://github.com/tokers/zstd-nginx-module/archive/refs/tags/0.1.0.tar.gz", wantURL: "https://github.com/tokers/zstd-nginx-module/archive/refs/tags/0.1.1.tar.gz"},
	} {
		c := lock.Component{Name: tc.name, Version: tc.old, URL: tc.url, SHA256: strings.Repeat("a", 64)}
		if tc.sig != "" {
			c.Signature = &lock.Signature{URL: tc.sig, Fingerprints: []string{strings.Repeat("A", 40)}}
		}
		got, err := bump(c, tc.new)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Bump(%s) error = %v, want %q", tc.url, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Bump(%s): %v", tc.url, err)
		}
		if got.URL != tc.wantURL || got.Version != tc.new || got.SHA256 != "" {
			t.Errorf("Bump(%s) = %+v, want url %s, version %s, no checksum", tc.url, got, tc.wantURL, tc.new)
		}
		if tc.sig != "" {
			if got.Signature.URL != tc.wantSig || got.Signature.Fingerprints[0] != c.Signature.Fingerprints[0] {
				t.Errorf("Bump signature = %+v, want %s with the same fingerprints", got.Signature, tc.wantSig)
			}
			if &got.Signature.Fingerprints[0] == &c.Signature.Fingerprints[0] {
				t.Errorf("Bump shares the fingerprint slice with the old component")
			}
		}
	}
}

// The directory each release tarball unpacks into: GitHub names an archive's after the
// repository and the tag without its "v".
func TestTopDirName(t *testing.T) {
	for _, tc := range []struct{ component, version, want string }{
		{lock.Nginx, "1.28.0", "nginx-1.28.0"},
		{lock.Brotli, "1.2.0", "brotli-1.2.0"},
		{lock.NgxBrotli, "1.0.0rc", "ngx_brotli-1.0.0rc"},
		{lock.Zstd, "1.5.7", "zstd-1.5.7"},
		{lock.ZstdNginxModule, "0.1.1", "zstd-nginx-module-0.1.1"},
	} {
		if got := topDirName(tc.component, tc.version); got != tc.want {
			t.Errorf("TopDirName(%s, %s) = %s, want %s", tc.component, tc.version, got, tc.want)
		}
	}
}

// Every component a lock may hold has an upstream repository to look it up in.
func TestReposCoverEveryComponent(t *testing.T) {
	for _, name := range lock.AllComponents() {
		if upstreamOf(name).GitHub == "" {
			t.Errorf("component %s has no entry in Repos", name)
		}
	}
}

// The "unsigned" reasons an update refuses to carry over: those naming the locked version.
func TestContainsVersion(t *testing.T) {
	for _, tc := range []struct {
		s, v string
		want bool
	}{
		{"Debian's brotli_1.1.0.orig.tar.gz", "1.1.0", true},
		{"its only release is the GitHub tag v1.0.0rc", "1.0.0rc", true},
		{"google/brotli publishes no signatures", "1.1.0", false},
		{"built from 1.1.0.1", "1.1.0", false},
		{"tag v1.0.0rc1", "1.0.0rc", false},
		{"zlib 11.1.0", "1.1.0", false},
		{"", "1.1.0", false},
	} {
		if got := containsVersion(tc.s, tc.v); got != tc.want {
			t.Errorf("containsVersion(%q, %q) = %v, want %v", tc.s, tc.v, got, tc.want)
		}
	}
}
