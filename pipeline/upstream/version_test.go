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
	} {
		v, err := ParseVersion(tc.in)
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
	} {
		a, _ := ParseVersion(tc.a)
		b, _ := ParseVersion(tc.b)
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
		{"unknown", "v1.0", ""},
	} {
		v, ok := VersionFromTag(tc.component, tc.tag)
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
	} {
		c := lock.Component{Name: tc.name, Version: tc.old, URL: tc.url, SHA256: strings.Repeat("a", 64)}
		if tc.sig != "" {
			c.Signature = &lock.Signature{URL: tc.sig, Fingerprints: []string{strings.Repeat("A", 40)}}
		}
		got, err := Bump(c, tc.new)
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
