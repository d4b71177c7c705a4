package advisory

import (
	"fmt"
	"slices"
	"strings"
)

// Change is one difference a refresh makes to the snapshot, as the update pull request
// lists it for review.
type Change struct {
	// Kind is "added", "changed" or "removed".
	Kind     string
	Advisory Advisory
	// What names the fields that changed (Kind "changed").
	What []string
}

// String is the change as one line of the pull request body.
func (c Change) String() string {
	s := fmt.Sprintf("%s %s %s (severity %s): %s", c.Kind, c.Advisory.Component, c.Advisory.ID, c.Advisory.EffectiveSeverity(), c.Advisory.Summary)
	if len(c.What) > 0 {
		s += " [" + strings.Join(c.What, ", ") + "]"
	}
	return s
}

// Merge is s with component's advisories replaced by fresh (its feed read whole), and what
// changed. An advisory that upstream states as before keeps its entry as it is (its Source
// names the revision it was first read at), so a refresh that finds nothing new changes
// nothing, not even the feed's date, and the daily update opens no pull request for it. A
// reviewed severity and its reason are kept by ID (Refresh). With no change, s itself is
// returned.
func (s *Snapshot) Merge(component string, fresh []Advisory, feed Feed) (*Snapshot, []Change, error) {
	old := map[string]Advisory{}
	for _, a := range s.Advisories {
		if a.Component == component {
			old[a.ID] = a
		}
	}
	var changes []Change
	kept := make([]Advisory, 0, len(fresh))
	seen := map[string]bool{}
	for _, a := range fresh {
		if seen[a.ID] {
			return nil, nil, fmt.Errorf("%s %s listed twice by the feed", component, a.ID)
		}
		seen[a.ID] = true
		o, ok := old[a.ID]
		if !ok {
			changes = append(changes, Change{Kind: "added", Advisory: a})
			kept = append(kept, a)
			continue
		}
		if what := differences(o, a); len(what) > 0 {
			a.ReviewedSeverity, a.Review = o.ReviewedSeverity, o.Review
			changes = append(changes, Change{Kind: "changed", Advisory: a, What: what})
			kept = append(kept, a)
			continue
		}
		kept = append(kept, o)
	}
	for _, a := range s.Advisories {
		if a.Component == component && !seen[a.ID] {
			changes = append(changes, Change{Kind: "removed", Advisory: a})
		}
	}
	if len(changes) == 0 {
		return s, nil, nil
	}
	out, err := s.Refresh(component, kept, feed)
	if err != nil {
		return nil, nil, err
	}
	slices.SortStableFunc(changes, func(a, b Change) int { return compareIDs(b.Advisory.ID, a.Advisory.ID) })
	return out, changes, nil
}

// differences names the fields upstream states differently in b than in a: everything but
// where it was read and this repository's review.
func differences(a, b Advisory) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{
		{"severity", a.Severity == b.Severity},
		{"summary", a.Summary == b.Summary},
		{"url", a.URL == b.URL},
		// A snapshot's [] and a parser's nil are the same: none.
		{"affected", slices.Equal(a.Affected, b.Affected)},
		{"fixed", slices.Equal(a.Fixed, b.Fixed)},
		{"unknown", a.Unknown == b.Unknown},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}
