package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
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
}

// ImageReport is the update status of one base image.
type ImageReport struct {
	Role    string // "builder" or "runtime"
	Ref     string // the tag followed
	Current string // the locked digest ("" when none is pinned yet)
	Latest  string // the digest the tag points at now
	Update  bool
}

// Report is the result of a check.
type Report struct {
	Components []ComponentReport
	Images     []ImageReport
	// Warnings are for people and annotations (end of life, fallbacks); they do not fail
	// the run.
	Warnings []string
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

// Checker looks up the releases and image digests of a lock.
type Checker struct {
	Releases *Client
	Images   *ImageResolver
	// Now is the clock for end-of-life decisions (default time.Now).
	Now func() time.Time
	// Logf reports progress (default: quiet).
	Logf func(format string, args ...any)
}

// Check looks up every component of l (the required ones and the optional ones l has) and
// both base images. It goes on past a failed lookup so that one run reports every problem;
// the returned error joins them, and the report then holds what could be found (failed
// entries have an empty Latest).
func (ch *Checker) Check(ctx context.Context, l *lock.Lock) (*Report, error) {
	now := time.Now
	if ch.Now != nil {
		now = ch.Now
	}
	logf := ch.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	rep := &Report{}
	var errs []error
	for _, name := range lock.AllComponents() {
		// Every lock has the required components; an optional one it leaves out is not
		// built, so it is not looked up either.
		c, ok := l.Component(name)
		if !ok {
			continue
		}
		cr := ComponentReport{Name: name, Current: c.Version, Track: c.Track}
		cur, err := ParseVersion(c.Version)
		if err != nil {
			errs = append(errs, fmt.Errorf("lock component %s: %w", name, err))
			rep.Components = append(rep.Components, cr)
			continue
		}
		releases, source, err := ch.releases(ctx, name, rep, logf)
		if err != nil {
			errs = append(errs, err)
			rep.Components = append(rep.Components, cr)
			continue
		}
		sel, err := Select(name, c.Track, cur, releases, now())
		cr.Track = sel.Track
		if err != nil {
			errs = append(errs, err)
			rep.Components = append(rep.Components, cr)
			continue
		}
		cr.Latest, cr.EOL, cr.Source = sel.Target.String(), sel.EOL, source
		cr.Update = sel.Target.Compare(cur) > 0
		if sel.Target.Compare(cur) < 0 {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: the lock has %s, newer than the newest %s release upstream (%s); is the track right?", name, c.Version, sel.Track, sel.Target))
		}
		rep.Warnings = append(rep.Warnings, sel.Warnings...)
		logf("%s: locked %s, track %s, newest %s", name, c.Version, sel.Track, sel.Target)
		rep.Components = append(rep.Components, cr)
	}
	if ch.Images != nil {
		for _, im := range []struct {
			role string
			img  lock.Image
		}{{"builder", l.Images.Builder}, {"runtime", l.Images.Runtime}} {
			ir := ImageReport{Role: im.role, Ref: im.img.Ref, Current: im.img.Digest}
			d, err := ch.Images.Digest(ctx, im.img.Ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s image: %w", im.role, err))
			} else {
				ir.Latest = d
				ir.Update = d != im.img.Digest
				logf("%s image %s: locked %q, now %s", im.role, im.img.Ref, im.img.Digest, d)
			}
			rep.Images = append(rep.Images, ir)
		}
	}
	return rep, errors.Join(errs...)
}

// releases lists a component's releases: GitHub first; for nginx, nginx.org when GitHub
// fails (rate limit, outage), with a warning so the fallback is visible.
func (ch *Checker) releases(ctx context.Context, name string, rep *Report, logf func(string, ...any)) ([]Version, string, error) {
	vs, err := ch.Releases.GitHubReleases(ctx, name)
	if err == nil && len(vs) > 0 {
		return vs, "github", nil
	}
	if err == nil {
		err = fmt.Errorf("GitHub lists no release tags for %s", Repos[name].GitHub)
	}
	if name != lock.Nginx {
		return nil, "", fmt.Errorf("%s: %w", name, err)
	}
	logf("nginx: GitHub failed (%v); trying nginx.org", err)
	vs, err2 := ch.Releases.NginxOrgReleases(ctx)
	if err2 != nil {
		return nil, "", fmt.Errorf("nginx: GitHub: %w; fallback: %w", err, err2)
	}
	rep.Warnings = append(rep.Warnings, fmt.Sprintf("nginx: GitHub lookup failed (%v); used nginx.org's download page", err))
	return vs, "nginx.org", nil
}
