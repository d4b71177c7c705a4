package advisory

import (
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// Finding is one advisory that affects a version a lock pins.
type Finding struct {
	Advisory
	Version string // the pinned version it affects
	Track   string // the component's track in the lock
	// Fix is the fixed release on the component's track (FixOnTrack); "" when upstream
	// lists none there.
	Fix string
	// Unaffected, when there is no Fix, is the branch an update on the track reaches that
	// the advisory does not affect (UnaffectedOnTrack): OpenSSL's advisories for 3.3 and
	// 3.4 list fixes on those branches only, yet track "lts" moves to 3.5, which none of
	// their ranges covers.
	Unaffected string
}

// Unfixed: updating on the component's track does not end the finding (no fixed release
// listed there, and the branch the track reaches is affected or unknown).
func (f Finding) Unfixed() bool { return f.Fix == "" && f.Unaffected == "" }

// Affecting lists the advisories in s that affect the versions l pins, in the snapshot's
// order (newest first within a component after Write).
func (s *Snapshot) Affecting(l *lock.Lock) []Finding {
	var out []Finding
	for _, c := range l.Components {
		for _, a := range s.Advisories {
			if a.Component != c.Name || !a.Affects(c.Version) {
				continue
			}
			f := Finding{Advisory: a, Version: c.Version, Track: c.Track, Fix: a.FixOnTrack(c.Track, c.Version)}
			if f.Fix == "" {
				f.Unaffected = a.UnaffectedOnTrack(c.Track, c.Version)
			}
			out = append(out, f)
		}
	}
	return out
}

// Blocks: a push of this stack must not go out unacknowledged: high or critical, and a
// fixed release exists on the component's track, or the branch the track reaches is
// unaffected (so updating is the fix). An advisory with neither is reported, not refused:
// refusing would leave no way to build.
func (f Finding) Blocks() bool { return f.Level() >= LevelHigh && !f.Unfixed() }

// String is the finding as build prints it: one line, CVE, severity, fix, link.
func (f Finding) String() string {
	fix := "no fixed release on track " + quoteTrack(f.Track) + " listed upstream"
	switch {
	case f.Fix != "":
		fix = "fixed in " + f.Fix + " on track " + quoteTrack(f.Track)
	case f.Unaffected != "":
		fix = "not affecting " + f.Unaffected + ", the branch track " + quoteTrack(f.Track) + " updates to"
	}
	return fmt.Sprintf("%s %s: %s, severity %s, %s (%s; all fixed releases: %s) %s",
		f.Component, f.Version, f.ID, f.EffectiveSeverity(), fix, f.Summary, orNone(f.Fixed), f.URL)
}

func quoteTrack(t string) string {
	if t == "" {
		return `"latest"`
	}
	return `"` + t + `"`
}

func orNone(vs []string) string {
	if len(vs) == 0 {
		return "none listed"
	}
	return strings.Join(vs, ", ")
}
