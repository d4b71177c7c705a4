package forge

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// AcceptAdvisoryFlag is the flag that acknowledges advisories for a push; the refusal names it.
const AcceptAdvisoryFlag = "--accept-advisory"

// advisories reads the reviewed snapshot (r.Advisories, else pipeline/advisory's default,
// else the copy built into the program) and lists what affects l. With Push, a high or
// critical advisory that has a fixed release on its component's track refuses the request
// unless AcceptAdvisories names it: publishing a stack with a known, fixed, serious hole is
// a decision a person makes by name, so a new advisory is never accepted silently. Nothing
// has been fetched when this runs (Resolve).
func (r Request) advisories(l *lock.Lock) ([]advisory.Finding, error) {
	path := r.Advisories
	if path == "" {
		path = advisory.DefaultPath
	}
	snap, err := advisory.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%w (nothing was built)", err)
	}
	found := snap.Affecting(l)
	for _, id := range r.AcceptAdvisories {
		if !slices.ContainsFunc(found, func(f advisory.Finding) bool { return f.ID == id && f.Blocks() }) {
			return nil, fmt.Errorf("%s %s: no high or critical advisory with a fixed release affects this lock under that ID: drop it (an acknowledgement names only what it acknowledges)", AcceptAdvisoryFlag, id)
		}
	}
	if !r.Push {
		return found, nil
	}
	var refused, ids []string
	for _, f := range found {
		if f.Blocks() && !slices.Contains(r.AcceptAdvisories, f.ID) {
			refused = append(refused, f.String())
			ids = append(ids, f.ID)
		}
	}
	if len(refused) > 0 {
		slices.Sort(ids)
		ids = slices.Compact(ids)
		return nil, fmt.Errorf("refusing to publish (nothing was fetched): %d high or critical advisories affect the lock and updating on the component's track ends them (a fixed release there, or a branch they do not affect):\n  %s\nupdate the lock (go run ./ci check-updates --write, then review the pull request), or publish anyway by naming each one: %s %s",
			len(ids), strings.Join(refused, "\n  "), AcceptAdvisoryFlag, strings.Join(ids, ","))
	}
	return found, nil
}

// reportAdvisories says, before anything is fetched, each advisory that affects the lock:
// high and critical ones as warnings (annotations in Actions), the others as lines.
func (b *build) reportAdvisories(found []advisory.Finding) {
	for _, f := range found {
		line := "advisory: " + f.String()
		if slices.Contains(b.req.AcceptAdvisories, f.ID) {
			line += " (acknowledged: " + AcceptAdvisoryFlag + ")"
		}
		if f.Level() >= advisory.LevelHigh {
			b.sink.Send(progress.Note{Level: progress.Warning, Text: line})
			b.res.Warnings = append(b.res.Warnings, line)
			continue
		}
		b.sink.Send(progress.Note{Level: progress.Info, Text: line})
	}
}
