package upstream

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Track values understood by selectRelease (besides a pinned "X.Y" branch).
const (
	trackLatest = "latest" // the newest release of any branch
	trackStable = "stable" // nginx: the newest stable (even minor) branch
	trackLTS    = "lts"    // OpenSSL: the newest long-term-support branch
)

// Branch support of OpenSSL, from openssl.org/policies/releasestrat and the release notes.
// An LTS branch gets five years, others about thirteen months.
type branchSupport struct {
	End time.Time
	LTS bool
}

func day(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

// openSSLSupport is the end-of-life table of OpenSSL branches. A branch missing here (a new
// one) has an unknown end and raises no warning.
var openSSLSupport = map[string]branchSupport{
	"1.1.1": {End: day("2023-09-11"), LTS: true},
	"1.1":   {End: day("2023-09-11"), LTS: true},
	"3.0":   {End: day("2026-09-07"), LTS: true},
	"3.1":   {End: day("2025-03-14")},
	"3.2":   {End: day("2025-11-23")},
	"3.3":   {End: day("2026-04-09")},
	"3.4":   {End: day("2026-10-22")},
	"3.5":   {End: day("2030-04-08"), LTS: true},
	"3.6":   {End: day("2026-11-01")},
}

// soonWarning is how far ahead of an end of life a warning starts.
const soonWarning = 90 * 24 * time.Hour

// selection is what a track policy picks from the known releases.
type selection struct {
	// Track is the effective track (the lock's, or the default for an empty one).
	Track string
	// Target is the newest release the track allows; it may be older than or equal to the
	// current version, in which case there is nothing to update.
	Target version
	// EOL describes the support of Target's branch for people: "2030-04-08",
	// "ended 2026-04-09", "superseded by 1.28", or "" when nothing is known.
	EOL string
	// Warnings are for annotations: an end-of-life or superseded pin, a track that cannot
	// move forward.
	Warnings []string
}

// errTrack marks a lock track that picks no release: a person edits the lock.
var errTrack = errors.New("the lock's track picks no release")

var branchTrackRE = regexp.MustCompile(`^[0-9]+\.[0-9]+$`)

// defaultTrack is the track of a component whose lock entry has none: the current branch
// for a component the table keeps on its branch (lock.Spec.StaysOnBranch: nginx and OpenSSL,
// whose branch change is a deliberate edit), else the latest release.
func defaultTrack(component string, current version) string {
	if upstreamOf(component).StaysOnBranch {
		return current.Branch()
	}
	return trackLatest
}

// selectRelease applies component's track to releases (any order) and reports the target and the
// branch's support status at now.
func selectRelease(component, track string, current version, releases []version, now time.Time) (selection, error) {
	if track == "" {
		track = defaultTrack(component, current)
	}
	s := selection{Track: track}
	if len(releases) == 0 {
		return s, fmt.Errorf("%s: upstream lists no releases", component)
	}
	newest := func(keep func(version) bool) version { return newestOf(releases, keep) }
	target, err := trackTarget(component, track, current, newest)
	if err != nil {
		return s, err
	}
	s.Target = target

	branch := s.Target.Branch()
	switch component {
	case lock.OpenSSL:
		sup, known := openSSLSupport[branch]
		if !known {
			break
		}
		date := sup.End.Format(time.DateOnly)
		switch {
		case !now.Before(sup.End):
			s.EOL = "ended " + date
			fix := "set the lock's openssl track to \"lts\" or a supported branch"
			if lts := newest(func(v version) bool { sp, ok := openSSLSupport[v.Branch()]; return ok && sp.LTS && now.Before(sp.End) }); lts != nil {
				fix = fmt.Sprintf("set the lock's openssl track to %q (LTS until %s) or \"lts\"", lts.Branch(), openSSLSupport[lts.Branch()].End.Format(time.DateOnly))
			}
			s.Warnings = append(s.Warnings, fmt.Sprintf("OpenSSL %s reached end of life on %s and gets no more security fixes: %s", branch, date, fix))
		case sup.End.Sub(now) < soonWarning:
			s.EOL = date
			s.Warnings = append(s.Warnings, fmt.Sprintf("OpenSSL %s reaches end of life on %s (in %d days): plan a move to a newer branch", branch, date, int(sup.End.Sub(now).Hours()/24)))
		default:
			s.EOL = date
			if sup.LTS {
				s.EOL += " (LTS)"
			}
		}
	case lock.Nginx:
		// nginx supports one stable branch at a time: a stable branch is over once a newer
		// stable one is released (likewise mainline, which the next mainline replaces).
		parity := s.Target[1] % 2
		if succ := newest(func(v version) bool { return v[1]%2 == parity && v.Compare(s.Target) > 0 && v.Branch() != branch }); succ != nil {
			s.EOL = "superseded by " + succ.Branch()
			s.Warnings = append(s.Warnings, fmt.Sprintf("nginx %s is no longer maintained: %s superseded it; set the lock's nginx track to %q or %q", branch, succ.Branch(), succ.Branch(), trackStable))
		}
	}
	return s, nil
}

// newestOf is the newest of releases that keep accepts, or nil.
func newestOf(releases []version, keep func(version) bool) version {
	var best version
	for _, v := range releases {
		if keep(v) && (best == nil || v.Compare(best) > 0) {
			best = v
		}
	}
	return best
}

// trackTarget is the release track picks (selectRelease), newest choosing among the releases.
func trackTarget(component, track string, current version, newest func(func(version) bool) version) (version, error) {
	switch {
	case track == trackLatest:
		return newest(func(version) bool { return true }), nil
	case track == trackStable:
		if component != lock.Nginx {
			return nil, fmt.Errorf("%s: track %q is only for nginx (use %q or a branch like %q): %w", component, track, trackLatest, current.Branch(), errTrack)
		}
		// nginx's stable branches have an even minor number; mainline has an odd one.
		branch := newest(func(v version) bool { return len(v) >= 2 && v[1]%2 == 0 })
		if branch == nil {
			return nil, fmt.Errorf("nginx: upstream lists no stable (even minor) release")
		}
		b := branch.Branch()
		return newest(func(v version) bool { return v.Branch() == b }), nil
	case track == trackLTS:
		if component != lock.OpenSSL {
			return nil, fmt.Errorf("%s: track %q is only for OpenSSL (use %q or a branch like %q): %w", component, track, trackLatest, current.Branch(), errTrack)
		}
		if t := newest(func(v version) bool { return openSSLSupport[v.Branch()].LTS }); t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("openssl: upstream lists no release of an LTS branch")
	case branchTrackRE.MatchString(track):
		if t := newest(func(v version) bool { return v.Branch() == track }); t != nil {
			return t, nil
		}
		return nil, fmt.Errorf("%s: track %q matches no upstream release (is the branch right? set the lock's track to an existing branch): %w", component, track, errTrack)
	}
	return nil, fmt.Errorf("%s: track %q is not %q, %q, %q or a branch like \"1.26\": %w", component, track, trackLatest, trackStable, trackLTS, errTrack)
}
