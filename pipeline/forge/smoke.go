package forge

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// smokeAll smoke-tests each image before it is written or published. A pushed image is
// smoke-tested again, by digest, as pulled back from the registry (see publish).
func (b *build) smokeAll(ctx context.Context) error {
	if !b.req.WantsImage() || b.req.Push {
		return nil
	}
	if b.req.NoSmoke {
		b.sink.Send(progress.Infof("smoke: skipped (--no-smoke)"))
		return nil
	}
	for _, t := range b.targets {
		if _, err := b.smoke(ctx, t, t.img); err != nil {
			return fmt.Errorf("smoke-testing image %s (%s): %w", t.res.Digest, t.plan.Platform, err)
		}
	}
	return nil
}

// smoke runs the suite on img with the engine and records the report; it fails unless every
// check passed (the Smoked event then carries OK false, and the table is for everyone).
func (b *build) smoke(ctx context.Context, t *target, img v1.Image) (smoke.Report, error) {
	expect, err := expectOf(b.l, t.plan)
	if err != nil {
		return smoke.Report{}, err
	}
	step := fmt.Sprintf("smoke (%s)", t.plan.Platform)
	b.stepStarted(step)
	start := time.Now()
	rep, err := b.eng.Smoke(ctx, t.plan, img, smoke.Options{Expect: expect})
	b.stepDone(step, time.Since(start), progress.Built)
	if err != nil {
		return rep, err
	}
	t.res.Smoke = &rep
	var table strings.Builder
	rep.Print(&table)
	err = rep.Err()
	if notRun := notRun(rep, expect); err == nil && len(notRun) > 0 {
		err = fmt.Errorf("smoke checks not run: %s (every check must run before an image is written or a tag moves; a check the engine cannot run is a failure)", strings.Join(notRun, ", "))
	}
	p, f, sk := rep.Counts()
	b.sink.Send(progress.Smoked{Platform: t.plan.Platform.String(), Passed: p, Failed: f, Skipped: sk,
		Table: strings.TrimRight(table.String(), "\n"), OK: err == nil})
	return rep, err
}

// notRun names the checks of rep that were skipped, with the reason: each is a failure of
// the build's gate. The one skip that is not is HTTP/3 on a build without the http_v3
// module (expect, the plan's modules as the suite was told to expect them): there is
// nothing to check (the other optional modules' checks pass by checking the absence).
func notRun(rep smoke.Report, expect smoke.Expect) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status != smoke.Skip {
			continue
		}
		if r.Name == smoke.CheckHTTP3 && !expect.Wants(smoke.HTTP3ModuleFlag, nil) {
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s)", r.Name, firstLine(r.Detail)))
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// expectFor is what the smoke tests compare an image with: the lock's versions and the
// configure flags of the modules (nil: the default set), validated as the plan validates them.
func expectFor(l *lock.Lock, modules []string) (smoke.Expect, error) {
	flags, err := plan.ModuleFlags(l, modules)
	if err != nil {
		return smoke.Expect{}, err
	}
	e := versionsOf(l)
	// A target named without a platform of its own (a server's address) is compared with
	// the default platform's architecture; an image's own platform replaces it.
	e.Arch = plan.DefaultPlatform.Arch
	e.Modules = flags
	return e, nil
}

// expectOf is expectFor for a plan already made: the lock's versions and p's modules.
func expectOf(l *lock.Lock, p *plan.Plan) (smoke.Expect, error) {
	e := versionsOf(l)
	e.Arch = p.Platform.Arch
	var err error
	e.Modules, err = plan.ConfigureFlags(p.Modules)
	return e, err
}

// versionsOf are the versions of l's components an image reports (nginx -V and the TLS and
// PCRE2 libraries it links).
func versionsOf(l *lock.Lock) smoke.Expect {
	var e smoke.Expect
	for _, c := range []struct {
		name string
		dst  *string
	}{{lock.Nginx, &e.Nginx}, {lock.OpenSSL, &e.OpenSSL}, {lock.AWSLC, &e.AWSLC}, {lock.PCRE2, &e.PCRE2}} {
		if comp, ok := l.Component(c.name); ok {
			*c.dst = comp.Version
		}
	}
	return e
}

// expectRecorded is what the smoke tests compare an image with when only the image is
// given: the nginx, OpenSSL and PCRE2 versions and the modules it records (image.ReadRecord);
// Modules stays nil (reported, not compared) when the image does not record them.
func expectRecorded(rec image.Record) (smoke.Expect, error) {
	e := smoke.Expect{Nginx: rec.Versions[lock.Nginx], OpenSSL: rec.Versions[lock.OpenSSL], AWSLC: rec.Versions[lock.AWSLC], PCRE2: rec.Versions[lock.PCRE2]}
	if rec.Modules == nil {
		return e, nil
	}
	var err error
	if e.Modules, err = plan.ConfigureFlags(rec.Modules); err != nil {
		return smoke.Expect{}, fmt.Errorf("the image records a module this version of nginx-forge does not know (name the expected modules with --modules, or \"any\"): %w", err)
	}
	return e, nil
}
