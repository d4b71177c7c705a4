package advisory

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// version is a release number: two to four dot-separated decimal numbers (nginx 1.30.1,
// OpenSSL 3.5.4). Anything else does not parse: a range that cannot be compared must not
// silently match nothing.
type version []int

func parseVersion(s string) (version, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 || len(parts) > 4 {
		return nil, fmt.Errorf("version %q is not N.N[.N[.N]]", s)
	}
	v := make(version, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || p == "" || (len(p) > 1 && p[0] == '0') || len(p) > 6 {
			return nil, fmt.Errorf("version %q is not N.N[.N[.N]]", s)
		}
		v[i] = n
	}
	return v, nil
}

func (v version) compare(w version) int {
	for i := 0; i < max(len(v), len(w)); i++ {
		a, b := 0, 0
		if i < len(v) {
			a = v[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return a - b
		}
	}
	return 0
}

// branch is major.minor: nginx's and OpenSSL's branches both are.
func (v version) branch() string { return fmt.Sprintf("%d.%d", v[0], v[1]) }

func (r Range) validate() error {
	from, err := parseVersion(r.From)
	if err != nil {
		return fmt.Errorf("affected from: %w", err)
	}
	if (r.To == "") == (r.Before == "") {
		return fmt.Errorf("affected range from %s: give exactly one of to (inclusive) and before", r.From)
	}
	end, inclusive := r.To, true
	if r.Before != "" {
		end, inclusive = r.Before, false
	}
	e, err := parseVersion(end)
	if err != nil {
		return fmt.Errorf("affected range end: %w", err)
	}
	if c := from.compare(e); c > 0 || (c == 0 && !inclusive) {
		return fmt.Errorf("affected range %s: empty (its start is past its end)", r)
	}
	return nil
}

func (r Range) String() string {
	if r.Before != "" {
		return r.From + " up to " + r.Before
	}
	return r.From + "-" + r.To
}

// contains: v within the range (both parse: Validate checked them).
func (r Range) contains(v version) bool {
	from, _ := parseVersion(r.From)
	if v.compare(from) < 0 {
		return false
	}
	if r.Before != "" {
		b, _ := parseVersion(r.Before)
		return v.compare(b) < 0
	}
	to, _ := parseVersion(r.To)
	return v.compare(to) <= 0
}

// Affects: the advisory lists version among its affected ranges, and no fixed release of
// version's own branch is at or below it. nginx's ranges span branches ("1.5.13-1.27.0",
// good "1.27.1+, 1.26.2+"): 1.26.2 is inside the range yet fixed. A version that does not
// parse is affected by nothing here (the lock's own rules refuse it earlier).
func (a Advisory) Affects(ver string) bool {
	v, err := parseVersion(ver)
	if err != nil || !slices.ContainsFunc(a.Affected, func(r Range) bool { return r.contains(v) }) {
		return false
	}
	for _, f := range a.Fixed {
		if fv, err := parseVersion(f); err == nil && fv.branch() == v.branch() && v.compare(fv) >= 0 {
			return false
		}
	}
	return true
}

// openSSLLTS are OpenSSL's long-term-support branches, what the lock's "lts" track follows.
// pipeline/upstream's support calendar says the same (a test there compares them).
var openSSLLTS = []string{"1.0.2", "1.1.1", "3.0", "3.5"}

// openSSLLTSBranch: branch is an OpenSSL long-term-support branch.
func openSSLLTSBranch(branch string) bool { return slices.Contains(openSSLLTS, branch) }

// FixOnTrack is the advisory's fixed release that an update on the component's track
// (the lock's "track") would reach, newer than pinned; "" when upstream lists none:
//   - a branch ("1.26", "3.5"): the fix on that branch;
//   - nginx "stable": the newest fix on an even (stable) branch; "mainline" an odd one;
//   - OpenSSL "lts": the newest fix on a long-term-support branch;
//   - "latest" (or no track): the newest fix.
func (a Advisory) FixOnTrack(track, pinned string) string {
	pv, err := parseVersion(pinned)
	if err != nil {
		return ""
	}
	var best version
	var bestS string
	for _, f := range a.Fixed {
		fv, err := parseVersion(f)
		if err != nil || fv.compare(pv) <= 0 || !onTrack(a.Component, track, fv) {
			continue
		}
		if best == nil || fv.compare(best) > 0 {
			best, bestS = fv, f
		}
	}
	return bestS
}

// UnaffectedOnTrack is, for an OpenSSL version on track "lts", the newest long-term-support
// branch ("3.5") when it is newer than pinned's branch and none of the advisory's affected
// ranges reaches into it: an update on the track ends the finding although upstream lists no
// fix there (its advisories name fixes on the affected branches only). "" otherwise: other
// tracks either name one branch (its fix is FixOnTrack's) or follow branches this package
// cannot list (nginx's stable and mainline).
func (a Advisory) UnaffectedOnTrack(track, pinned string) string {
	pv, err := parseVersion(pinned)
	if err != nil || a.Component != "openssl" || track != "lts" {
		return ""
	}
	newest := openSSLLTS[len(openSSLLTS)-1]
	bv, err := parseVersion(newest + ".0")
	if err != nil || bv.compare(pv) <= 0 || bv.branch() == pv.branch() {
		return ""
	}
	for _, r := range a.Affected {
		from, err := parseVersion(r.From)
		if err != nil || from.branch() == newest || r.contains(bv) {
			return ""
		}
	}
	return newest
}

func onTrack(component, track string, v version) bool {
	switch {
	case track == "" || track == "latest":
		return true
	case component == "nginx" && track == "stable":
		return v[1]%2 == 0
	case component == "nginx" && track == "mainline":
		return v[1]%2 == 1
	case component == "openssl" && track == "lts":
		return openSSLLTSBranch(v.branch()) || (len(v) > 2 && openSSLLTSBranch(fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])))
	}
	return v.branch() == track
}
