package lock

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// specProblems lists what a table row lacks: every component needs its upstream (repository
// and tag rule), its licence and licence files; a module needs its --modules name, configure
// flag and an existing library it requires; names are unique and optional rows follow the
// core ones (the lock is written in table order).
func specProblems(table []Spec) []string {
	var out []string
	seen := map[string]Kind{}
	optional := false
	for _, s := range table {
		p := func(what string) { out = append(out, s.Name+": "+what) }
		if _, dup := seen[s.Name]; dup {
			p("appears twice")
		}
		seen[s.Name] = s.Kind
		if s.GitHub == "" || s.Tag == nil || s.Tag.NumSubexp() != 1 {
			p("no repository, or no tag rule capturing the version")
		}
		if s.License == "" || len(s.LicenseFiles) == 0 {
			p("no licence or no licence files")
		}
		if s.Optional != (s.Kind == KindModule || s.Kind == kindLibrary) {
			p("optional exactly when a module or a module's library")
		}
		if s.Optional {
			optional = true
		} else if optional {
			p("a core component after an optional one")
		}
		if (s.Kind == KindModule) != (s.Module != "" && strings.HasPrefix(s.ConfigureFlag, "--add-module=../")) {
			p("a module, and only a module, has a --modules name and an --add-module=../ flag")
		}
	}
	for _, s := range table {
		for _, r := range s.Requires {
			if seen[r] != kindLibrary {
				out = append(out, s.Name+": requires "+r+", which is no library of the table")
			}
		}
	}
	return out
}

func TestComponentTable(t *testing.T) {
	for _, p := range specProblems(specs) {
		t.Error(p)
	}
	// The order is the lock's write order and the build's: a change is a change of every
	// lock file's bytes.
	if want := []string{Zlib, ZlibNG, PCRE2, OpenSSL, AWSLC, Nginx, Brotli, NgxBrotli, Zstd, ZstdNginxModule, Libmaxminddb, NgxGeoIP2, ngxEcho, ngxFancyindex}; !slices.Equal(AllComponents(), want) {
		t.Errorf("AllComponents() = %v, want %v", AllComponents(), want)
	}
	if !slices.Equal(TLSLibraries, []string{OpenSSL, AWSLC}) || !slices.Equal(ZlibLibraries, []string{Zlib, ZlibNG}) {
		t.Errorf("TLSLibraries %v, ZlibLibraries %v: the default first, then the other", TLSLibraries, ZlibLibraries)
	}
	planted := append(Specs(), Spec{Name: "headers_more", Kind: KindModule, Optional: true, GitHub: "openresty/headers-more-nginx-module",
		Tag: regexp.MustCompile(`^v(.*)$`), License: "BSD-2-Clause", Module: "headers-more", Requires: []string{Nginx}},
		Spec{Name: Zlib, Kind: KindZlib})
	got := strings.Join(specProblems(planted), "\n")
	for _, w := range []string{
		"headers_more: no licence or no licence files",
		"headers_more: a module, and only a module, has a --modules name and an --add-module=../ flag",
		"headers_more: requires nginx, which is no library of the table",
		"zlib: appears twice", "zlib: no repository", "zlib: a core component after an optional one",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("planted rows: problems\n%s\nlack %q", got, w)
		}
	}
}
