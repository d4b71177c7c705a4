// Package upstream finds new upstream releases of the locked components and base images,
// applies each component's track policy, knows which release branches have reached their end
// of life, and rewrites the lock for the releases it found (after the source package has
// verified them).
//
// It reads machine-readable sources only: the GitHub releases and tags APIs (nginx/nginx,
// openssl/openssl, PCRE2Project/pcre2, madler/zlib), nginx.org's download page as a fallback
// for nginx, and registries (HEAD of the builder and runtime tags). Every base URL is an
// option so tests point them at loopback servers.
package upstream

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Version is a dotted release number, compared numerically part by part.
type Version []int

// ParseVersion parses "1.26.3", "10.46" or "3.5.7". Anything else (suffixes such as
// "-beta1" or "-RC1", empty parts) is an error: those are never releases we build.
func ParseVersion(s string) (Version, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("version %q: want 2 to 4 dot-separated numbers", s)
	}
	v := make(Version, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return nil, fmt.Errorf("version %q: part %q is not a number", s, p)
		}
		v[i] = n
	}
	return v, nil
}

func (v Version) String() string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ".")
}

// Compare returns -1, 0 or 1. Missing parts count as zero, so 1.3 == 1.3.0.
func (v Version) Compare(w Version) int {
	for i := 0; i < len(v) || i < len(w); i++ {
		a, b := 0, 0
		if i < len(v) {
			a = v[i]
		}
		if i < len(w) {
			b = w[i]
		}
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
	}
	return 0
}

// Branch is the first two parts ("1.26" of 1.26.3): nginx's and OpenSSL's release line.
func (v Version) Branch() string {
	if len(v) < 2 {
		return v.String()
	}
	return fmt.Sprintf("%d.%d", v[0], v[1])
}

// Repo describes where a component's releases are published.
type Repo struct {
	// GitHub is "owner/name".
	GitHub string
	// tag matches a release tag and captures its version. The patterns are anchored and
	// take digits and dots only, so pre-release tags (openssl-3.6.0-beta1, pcre2-10.45-RC1),
	// old-style tags (OpenSSL_1_1_1w) and anything odd never match.
	tag *regexp.Regexp
}

// Repos maps each component to its upstream repository.
var Repos = map[string]Repo{
	lock.Nginx:   {GitHub: "nginx/nginx", tag: regexp.MustCompile(`^release-([0-9]+\.[0-9]+\.[0-9]+)$`)},
	lock.OpenSSL: {GitHub: "openssl/openssl", tag: regexp.MustCompile(`^openssl-([0-9]+\.[0-9]+\.[0-9]+)$`)},
	lock.PCRE2:   {GitHub: "PCRE2Project/pcre2", tag: regexp.MustCompile(`^pcre2-([0-9]+\.[0-9]+)$`)},
	lock.Zlib:    {GitHub: "madler/zlib", tag: regexp.MustCompile(`^v([0-9]+\.[0-9]+(?:\.[0-9]+){0,2})$`)},
}

// VersionFromTag returns the release version a tag names for the component, or false when
// the tag is not a final release of it.
func VersionFromTag(component, tag string) (Version, bool) {
	r, ok := Repos[component]
	if !ok {
		return nil, false
	}
	m := r.tag.FindStringSubmatch(tag)
	if m == nil {
		return nil, false
	}
	v, err := ParseVersion(m[1])
	if err != nil {
		return nil, false
	}
	return v, true
}
