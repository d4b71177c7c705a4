package upstream

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// ComponentReport is the update status of one component.
type ComponentReport struct {
	Name    string
	Track   string // the effective track
	Current string // the locked version
	Latest  string // the newest release the track allows ("" when the lookup failed)
	Update  bool   // Latest is newer than Current
	EOL     string // support status of Latest's branch, see Selection.EOL
	Source  string // where the release list came from: "github" or "nginx.org"
	// Tag, Commit and Tree are, for a component pinned by git commit with an update, Latest's
	// release tag, the commit it points at and that commit's tree (GitHub's git database
	// API); the update verifies them by fetching the commit before it writes them.
	Tag, Commit, Tree string
}

// ImageReport is the update status of one base image.
type ImageReport struct {
	Role    string // "builder" or "runtime"
	Ref     string // the tag followed
	Current string // the locked digest ("" when none is pinned yet)
	Latest  string // the digest the tag points at now
	Update  bool
	// Snapshot and LatestSnapshot are, for the builder, the archive snapshot the lock pins
	// ("" none) and the one proposed (lock.SnapshotLayout; "" none): the check's day, at
	// 00:00 UTC, when the builder's digest moves or the lock pins no snapshot yet. A
	// snapshot alone does not move every day: a new image is what brings a new archive.
	Snapshot, LatestSnapshot string
}

// snapshotOf is the archive snapshot a check on the day of now proposes: that day at 00:00
// UTC, a moment the archive has already passed.
func snapshotOf(now time.Time) string {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Format(lock.SnapshotLayout)
}

// Report is the result of a check.
type Report struct {
	Components []ComponentReport
	Images     []ImageReport
	// Warnings are for people and annotations (end of life, fallbacks); they do not fail
	// the run.
	Warnings []string
	// Failed are the lookups that failed: an update refuses these entries and makes the
	// others.
	Failed []Refusal
}

// Changed reports whether anything in the lock would change.
func (r *Report) Changed() bool {
	for _, c := range r.Components {
		if c.Update {
			return true
		}
	}
	for _, i := range r.Images {
		if i.Update {
			return true
		}
	}
	return false
}

// checker looks up the releases and image digests of a lock.
type checker struct {
	Releases *client
	Images   *ImageResolver
	// Now is the clock for end-of-life decisions (default time.Now).
	Now func() time.Time
	// Sink receives progress as Detail notes (nil: discarded).
	Sink progress.Sink
}

// sink is where the lookups' lines go (Sink; a checker made without one discards them).
func (ch *checker) sink() progress.Sink { return orDiscard(ch.Sink) }

// Check looks up every component of l (the required ones and the optional ones l has) and
// both base images, all at once: one unanswering host then costs the run one deadline (the
// context's), not one per component. It goes on past a failed lookup so that one run
// reports every problem: each failure is in the report's Failed (and so refused by an
// update) and the returned error joins them; the report holds what could be found (failed
// entries have an empty Latest).
func (ch *checker) Check(ctx context.Context, l *lock.Lock) (*Report, error) {
	now := time.Now
	if ch.Now != nil {
		now = ch.Now
	}
	var names []string
	for _, name := range lock.AllComponents() {
		// Every lock has the required components; an optional one it leaves out is not
		// built, so it is not looked up either.
		if _, ok := l.Component(name); ok {
			names = append(names, name)
		}
	}
	comps := make([]compResult, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comps[i] = ch.component(ctx, l.MustComponent(name), now())
		}()
	}
	roles := []struct {
		role string
		img  lock.Image
	}{{"builder", l.Images.Builder}, {"runtime", l.Images.Runtime}}
	images := make([]ImageReport, len(roles))
	imageErrs := make([]error, len(roles))
	if ch.Images != nil {
		for i, im := range roles {
			wg.Add(1)
			go func() {
				defer wg.Done()
				images[i] = ImageReport{Role: im.role, Ref: im.img.Ref, Current: im.img.Digest}
				d, err := ch.Images.Digest(ctx, im.img.Ref)
				if err != nil {
					imageErrs[i] = fmt.Errorf("%s image: %w", im.role, deadlineHint(ctx, err))
					return
				}
				images[i].Latest = d
				images[i].Update = d != im.img.Digest
				ch.sink().Send(progress.Detailf("%s image %s: locked %q, now %s", im.role, im.img.Ref, im.img.Digest, d))
				if im.role == "builder" {
					images[i].Snapshot = im.img.Snapshot
					if images[i].Update || im.img.Snapshot == "" {
						images[i].LatestSnapshot = snapshotOf(now())
						images[i].Update = images[i].Update || images[i].LatestSnapshot != im.img.Snapshot
						ch.sink().Send(progress.Detailf("builder archive snapshot: locked %q, proposed %s", im.img.Snapshot, images[i].LatestSnapshot))
					}
				}
			}()
		}
	}
	wg.Wait()

	rep := &Report{}
	var errs []error
	for _, r := range comps {
		rep.Components = append(rep.Components, r.cr)
		rep.Warnings = append(rep.Warnings, r.warnings...)
		if r.err != nil {
			errs = append(errs, r.err)
			rep.Failed = append(rep.Failed, Refusal{Name: r.cr.Name, Err: r.err, Fix: fixFor(r.cr.Name, r.err)})
		}
	}
	if ch.Images != nil {
		rep.Images = images
		for i, err := range imageErrs {
			if err != nil {
				errs = append(errs, err)
				rep.Failed = append(rep.Failed, Refusal{Name: roles[i].role + " image", Err: err, Fix: fixFor(roles[i].role+" image", err)})
			}
		}
	}
	return rep, errors.Join(errs...)
}

type compResult struct {
	cr       ComponentReport
	warnings []string
	err      error
}

// component looks up c's releases and picks its track's newest; for a component pinned by
// git commit with an update, it resolves the new release's tag to its commit and tree.
func (ch *checker) component(ctx context.Context, c lock.Component, now time.Time) compResult {
	r := compResult{cr: ComponentReport{Name: c.Name, Current: c.Version, Track: c.Track}}
	cur, err := parseVersion(c.Version)
	if err != nil {
		r.err = fmt.Errorf("lock component %s: %w", c.Name, err)
		return r
	}
	rl, warn, err := ch.releases(ctx, c.Name)
	r.warnings = append(r.warnings, warn...)
	if err != nil {
		r.err = err
		return r
	}
	sel, err := selectRelease(c.Name, c.Track, cur, rl.versions, now)
	r.cr.Track = sel.Track
	if err != nil {
		r.err = err
		return r
	}
	r.cr.Latest, r.cr.EOL, r.cr.Source = sel.Target.String(), sel.EOL, rl.source
	r.cr.Update = sel.Target.Compare(cur) > 0
	if sel.Target.Compare(cur) < 0 {
		r.warnings = append(r.warnings, fmt.Sprintf("%s: the lock has %s, newer than the newest %s release upstream (%s); is the track right?", c.Name, c.Version, sel.Track, sel.Target))
	}
	r.warnings = append(r.warnings, sel.Warnings...)
	ch.sink().Send(progress.Detailf("%s: locked %s, track %s, newest %s", c.Name, c.Version, sel.Track, sel.Target))
	if c.Git != nil && r.cr.Update {
		g, err := ch.gitRelease(ctx, c, r.cr.Latest, rl.tags[r.cr.Latest])
		if err != nil {
			r.err = fmt.Errorf("%s: release %s: %w", c.Name, r.cr.Latest, deadlineHint(ctx, err))
			return r
		}
		r.cr.Tag, r.cr.Commit, r.cr.Tree = g.Tag, g.Commit, g.Tree
		ch.sink().Send(progress.Detailf("%s %s: tag %s is commit %s, tree %s (GitHub)", c.Name, r.cr.Latest, g.Tag, g.Commit, g.Tree))
	}
	return r
}

// deadlineHint names the deadline in err when the context's deadline is what ended it, so
// that a run against an upstream that accepts connections but never answers says why it
// stopped.
func deadlineHint(ctx context.Context, err error) error {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return err
	}
	if d, ok := ctx.Value(deadlineKey{}).(time.Duration); ok {
		return fmt.Errorf("%w (no answer within the run's %s deadline, --timeout)", err, d)
	}
	return fmt.Errorf("%w (the run's deadline passed)", err)
}

type deadlineKey struct{}

// withDeadline returns ctx limited to d, for the whole of a check and its downloads, and
// remembers d so that errors can name it.
func withDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, d)
	return context.WithValue(ctx, deadlineKey{}, d), cancel
}

// releaseList is what releases found: the versions, the tags naming each (by
// version.String; none from nginx.org) and where they came from ("github", "nginx.org").
type releaseList struct {
	versions []version
	tags     map[string][]string
	source   string
}

// releases lists a component's releases: GitHub first; for nginx, nginx.org when GitHub
// fails (rate limit, outage), with a warning so the fallback is visible.
func (ch *checker) releases(ctx context.Context, name string) (releaseList, []string, error) {
	vs, tags, err := ch.Releases.GitHubReleaseTags(ctx, name)
	if err == nil && len(vs) > 0 {
		return releaseList{vs, tags, "github"}, nil, nil
	}
	if err == nil {
		err = fmt.Errorf("GitHub lists no release tags for %s", upstreamOf(name).GitHub)
	}
	err = deadlineHint(ctx, err)
	if name != lock.Nginx || ctx.Err() != nil {
		return releaseList{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	ch.sink().Send(progress.Detailf("nginx: GitHub failed (%v); trying nginx.org", err))
	vs, err2 := ch.Releases.NginxOrgReleases(ctx)
	if err2 != nil {
		return releaseList{}, nil, fmt.Errorf("nginx: GitHub: %w; fallback: %w", err, deadlineHint(ctx, err2))
	}
	return releaseList{vs, nil, "nginx.org"}, []string{fmt.Sprintf("nginx: GitHub lookup failed (%v); used nginx.org's download page", err)}, nil
}
