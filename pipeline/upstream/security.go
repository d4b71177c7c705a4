package upstream

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// SecurityFix is an advisory that a component's update fixes: it affects the locked version
// and not the new one (the reviewed snapshot, pipeline/advisory).
type SecurityFix struct {
	advisory.Advisory
	From, To string
}

// Security is what the advisories say about a run: the updates that fix advisories, and the
// versions that stay affected with no fixed release on their track (reported on their own:
// updating cannot fix them; a person must choose another track or accept them).
type Security struct {
	Fixes   []SecurityFix
	Unfixed []advisory.Finding
}

// security classifies each component of the report against the snapshot. With written,
// only the components in applied count as updated: a refused update fixes nothing.
func security(snap *advisory.Snapshot, r *Report, applied []Applied, written bool) *Security {
	s := &Security{}
	for _, c := range r.Components {
		updated := c.Update && (!written || slices.ContainsFunc(applied, func(a Applied) bool { return a.Name == c.Name && !a.IsImage() }))
		now := one(c.Name, c.Current, c.Track)
		after := now
		if updated {
			after = one(c.Name, c.Latest, c.Track)
			stays := map[string]bool{}
			for _, f := range snap.Affecting(after) {
				stays[f.ID] = true
			}
			for _, f := range snap.Affecting(now) {
				if !stays[f.ID] {
					s.Fixes = append(s.Fixes, SecurityFix{Advisory: f.Advisory, From: c.Current, To: c.Latest})
				}
			}
		}
		for _, f := range snap.Affecting(after) {
			if f.Unfixed() {
				s.Unfixed = append(s.Unfixed, f)
			}
		}
	}
	return s
}

// one is a lock of one component, as Affecting reads it.
func one(name, version, track string) *lock.Lock {
	return &lock.Lock{Components: []lock.Component{{Name: name, Version: version, Track: track}}}
}

// DefaultAdvisories is the reviewed advisories snapshot in a checkout (check-updates'
// --advisories default).
const DefaultAdvisories = advisory.DefaultPath

// Serious are the unfixed advisories of high or critical severity: check-updates' exit
// status 4 and its warnings.
func (s *Security) Serious() []advisory.Finding {
	var out []advisory.Finding
	for _, f := range s.Unfixed {
		if f.Level() >= advisory.LevelHigh {
			out = append(out, f)
		}
	}
	return out
}

// UnfixedLine is one unfixed advisory as the summary and standard error say it.
func UnfixedLine(f advisory.Finding) string {
	return fmt.Sprintf("%s %s stays affected by %s (severity %s): no fixed release on its track %q (fixed releases upstream lists: %v; %s): choose a track that has one in the lock, or accept it in a reviewed change",
		f.Component, f.Version, f.ID, f.EffectiveSeverity(), f.Track, f.Fixed, f.URL)
}

// SecurityBody is the pull request body's security section: each advisory the updates fix,
// with severity and link, and each that stays unfixed; "" when there is neither.
func SecurityBody(s *Security) string {
	if s == nil || (len(s.Fixes) == 0 && len(s.Unfixed) == 0) {
		return ""
	}
	var b strings.Builder
	if len(s.Fixes) > 0 {
		b.WriteString("## Security update\n\nThis update fixes these advisories (the reviewed snapshot, pipeline/advisory/advisories.json):\n\n| component | advisory | severity | fixed by | summary |\n|---|---|---|---|---|\n")
		for _, f := range s.Fixes {
			fmt.Fprintf(&b, "| %s | [%s](%s) | %s | %s -> %s | %s |\n", f.Component, f.ID, f.URL, f.EffectiveSeverity(), f.From, f.To, f.Summary)
		}
		b.WriteString("\n")
	}
	if len(s.Unfixed) > 0 {
		b.WriteString("## Advisories with no fixed release on the track\n\n")
		for _, f := range s.Unfixed {
			fmt.Fprintf(&b, "- %s\n", UnfixedLine(f))
		}
		b.WriteString("\n")
	}
	return b.String()
}
