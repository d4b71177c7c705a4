// Package upstream finds new upstream releases of the locked components and base images,
// applies each component's track policy, knows which release branches have reached their end
// of life, and rewrites the lock for the releases it found (after the source package has
// verified them).
//
// It reads machine-readable sources only: the GitHub releases and tags APIs (nginx/nginx,
// openssl/openssl, aws/aws-lc, PCRE2Project/pcre2, madler/zlib, zlib-ng/zlib-ng and, for the
// optional components a lock has, google/brotli, google/ngx_brotli, facebook/zstd,
// tokers/zstd-nginx-module), GitHub's git database API for a component pinned by git commit
// (its release tag's commit and that commit's tree), nginx.org's download page as a fallback
// for nginx, and registries (HEAD of the builder and runtime tags). Every base URL is an
// option so tests point them at loopback servers.
package upstream

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// version is a dotted release number, compared numerically part by part.
type version []int

// rcPart marks a release candidate: "1.0.0rc2" is {1, 0, 0, rcPart + 2}. It is negative, so
// a candidate sorts before its release (1.0.0 is {1, 0, 0}, and a missing part counts as
// zero) and after everything older, and candidates sort by number.
const rcPart = math.MinInt32

// parseVersion parses "1.26.3", "10.46", "3.5.7" or a release candidate such as "1.0.0rc"
// or "1.0.0rc2" (the form the lock allows, because ngx_brotli's only release is v1.0.0rc).
// Anything else (suffixes such as "-beta1" or "-RC1", empty parts) is an error: those are
// never releases we build. Which tags count as releases is each repo's pattern's decision.
func parseVersion(s string) (version, error) {
	// The lock's rule first, so a version is a version in every command or in none.
	if err := lock.CheckVersion(s); err != nil {
		return nil, fmt.Errorf("version %w", err)
	}
	rc := -1
	if i := strings.Index(s, "rc"); i >= 0 {
		n := s[i+2:]
		num, err := strconv.Atoi(n)
		if n != "" && (err != nil || num < 1 || n[0] == '0') {
			return nil, fmt.Errorf("version %q: %q is not rc followed by nothing or a number from 1", s, s[i:])
		}
		rc, s = num, s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("version %q: want 2 to 4 dot-separated numbers", s)
	}
	v := make(version, len(parts), len(parts)+1)
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') {
			return nil, fmt.Errorf("version %q: part %q is not a number", s, p)
		}
		v[i] = n
	}
	if rc >= 0 {
		v = append(v, rcPart+rc)
	}
	return v, nil
}

func (v version) String() string {
	var s []string
	rc := ""
	for _, n := range v {
		if n < 0 {
			rc = "rc"
			if n > rcPart {
				rc += strconv.Itoa(n - rcPart)
			}
			continue
		}
		s = append(s, strconv.Itoa(n))
	}
	return strings.Join(s, ".") + rc
}

// Compare returns -1, 0 or 1. Missing parts count as zero, so 1.3 == 1.3.0.
func (v version) Compare(w version) int {
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

// canonical is v's release without trailing zero parts ("1.4" for 1.4 and 1.4.0): equal
// versions (Compare) have one canonical form.
func (v version) canonical() string {
	n := len(v)
	for n > 1 && v[n-1] == 0 {
		n--
	}
	return v[:n].String()
}

// preferSpelling: of two spellings of one release (1.4, 1.4.0), v is the one to keep over
// old: the one with more parts, so that the choice does not depend on the order GitHub
// lists them in or a map's.
func preferSpelling(v, old version) bool {
	if len(v) != len(old) {
		return len(v) > len(old)
	}
	return v.String() < old.String()
}

// Branch is the first two parts ("1.26" of 1.26.3): nginx's and OpenSSL's release line.
func (v version) Branch() string {
	if len(v) < 2 {
		return v.String()
	}
	return fmt.Sprintf("%d.%d", v[0], v[1])
}

// upstreamOf is component's row of the component table (lock.Specs), which says where its
// releases are published: repository, release tag rule, tags-only, top directory and
// signature suffix. The zero Spec (no GitHub) for a component the table does not have.
func upstreamOf(component string) lock.Spec {
	s, _ := lock.SpecOf(component)
	return s
}

// topDirName is the top directory component's release v unpacks into: "<name>-<v>", with
// the table's TopDir for name when it has one.
func topDirName(component, v string) string {
	name := component
	if d := upstreamOf(component).TopDir; d != "" {
		name = d
	}
	return name + "-" + v
}

// versionFromTag returns the release version a tag names for the component, or false when
// the tag is not a final release of it.
func versionFromTag(component, tag string) (version, bool) {
	r := upstreamOf(component)
	if r.Tag == nil {
		return nil, false
	}
	m := r.Tag.FindStringSubmatch(tag)
	if m == nil {
		return nil, false
	}
	v, err := parseVersion(m[1])
	if err != nil {
		return nil, false
	}
	return v, true
}
