package upstream

import (
	"context"
	"fmt"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// applyComponents moves each component of out that rep says has an update and that can be
// vouched for; the refused ones start with rep.Failed.
func (u *updater) applyComponents(ctx context.Context, out *lock.Lock, rep *Report) ([]Applied, []Refusal) {
	var done []Applied
	refused := append([]Refusal(nil), rep.Failed...)
	failed := map[string]bool{}
	for _, r := range rep.Failed {
		failed[r.Name] = true
	}
	for _, cr := range rep.Components {
		// A lookup that failed after finding the release (a git tag that did not resolve)
		// is refused once, as the check reported it.
		if !cr.Update || failed[cr.Name] {
			continue
		}
		old := out.MustComponent(cr.Name)
		var next lock.Component
		var a Applied
		err := allowed(out, cr.Name, cr.Latest)
		switch {
		case err != nil:
		case old.Git != nil:
			next, a, err = u.gitComponent(ctx, old, cr)
		default:
			next, a, err = u.component(ctx, old, cr.Latest)
		}
		if err != nil {
			u.sink().Send(progress.Detailf("%s %s: refused: %v", cr.Name, cr.Latest, err))
			refused = append(refused, Refusal{Name: cr.Name, Target: cr.Latest, Err: err, Fix: fixFor(cr.Name, err)})
			continue
		}
		out.SetComponent(next)
		done = append(done, a)
	}
	return done, refused
}

// applyImages moves each base image of out that rep says has a new digest whose index
// covers the platforms. The error is a report that is not about out's images.
func (u *updater) applyImages(ctx context.Context, out *lock.Lock, rep *Report) ([]Applied, []Refusal, error) {
	var done []Applied
	var refused []Refusal
	for _, ir := range rep.Images {
		if !ir.Update || ir.Latest == "" {
			continue
		}
		img := &out.Images.Builder
		if ir.Role == "runtime" {
			img = &out.Images.Runtime
		}
		if img.Ref != ir.Ref {
			return nil, nil, fmt.Errorf("%s image: the report is for %q but the lock has %q", ir.Role, ir.Ref, img.Ref)
		}
		a, err := u.image(ctx, ir)
		if err != nil {
			refused = append(refused, Refusal{Name: ir.Role + " image", Target: ir.Latest, Err: err, Fix: fixFor(ir.Role+" image", err)})
			continue
		}
		a.Old = img.Digest
		img.Digest = ir.Latest
		if ir.Role == "builder" && ir.LatestSnapshot != "" {
			a.OldSnapshot, a.Snapshot = img.Snapshot, ir.LatestSnapshot
			img.Snapshot = ir.LatestSnapshot
		}
		done = append(done, a)
	}
	return done, refused, nil
}

// dropStaleProfiles drops out's recorded PGO profiles when done moves a component or the
// builder image, and returns done with one Applied for each profile dropped. A profile fits
// the sources and the compiler it was trained with: a new release changes the first, a new
// builder image may change the second (and a profile the compiler cannot read stops the
// build). The body says to record again.
func dropStaleProfiles(out *lock.Lock, done []Applied) []Applied {
	stale := false
	for _, a := range done {
		stale = stale || !a.IsImage() || a.Name == "builder image"
	}
	if !stale {
		return done
	}
	for _, p := range out.Profiles {
		done = append(done, Applied{Name: "PGO profile " + p.Platform, Old: p.Training, New: "dropped", DroppedProfile: p.Platform})
	}
	out.Profiles = nil
	return done
}
