package forge

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// smokeAll smoke-tests each image before it is written or published. A pushed image is
// smoke-tested again, by digest, as pulled back from the registry (see publish).
func (b *build) smokeAll(ctx context.Context) error {
	if !b.req.WantsImage() || b.req.Push {
		return nil
	}
	if b.req.NoSmoke {
		b.logf("smoke: skipped (--no-smoke)")
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
// check passed, printing the table then even when not verbose.
func (b *build) smoke(ctx context.Context, t *target, img v1.Image) (smoke.Report, error) {
	expect, err := Expect(b.l, t.plan.Modules)
	if err != nil {
		return smoke.Report{}, err
	}
	step := fmt.Sprintf("smoke (%s)", t.plan.Platform)
	b.stepStarted(step)
	start := time.Now()
	rep, err := b.eng.Smoke(ctx, t.plan, img, smoke.Options{Expect: expect})
	b.stepDone(step, time.Since(start), engine.Built)
	if err != nil {
		return rep, err
	}
	t.res.Smoke = &rep
	var table strings.Builder
	rep.Print(&table)
	err = rep.Err()
	if notRun := notRun(rep, t.plan); err == nil && len(notRun) > 0 {
		err = fmt.Errorf("smoke checks not run: %s (every check must run before an image is written or a tag moves; a check the engine cannot run is a failure)", strings.Join(notRun, ", "))
	}
	if err != nil {
		// The table of a failed suite is for everyone, not only -v.
		b.log.Error(strings.TrimRight(table.String(), "\n"))
		return rep, err
	}
	b.vlogf("%s", strings.TrimRight(table.String(), "\n"))
	p, f, sk := rep.Counts()
	b.logf("smoke (%s): %d passed, %d failed, %d skipped", t.plan.Platform, p, f, sk)
	return rep, nil
}

// notRun names the checks of rep that were skipped, with the reason: each is a failure of
// the build's gate. The one skip that is not is HTTP/3 on a build without the http_v3
// module: there is nothing to check (the other optional modules' checks pass by checking
// the absence).
func notRun(rep smoke.Report, p *plan.Plan) []string {
	var want smoke.Expect // the plan's modules as the suite was told to expect them
	for _, m := range plan.Modules {
		if slices.Contains(p.Modules, m.Name) {
			want.Modules = append(want.Modules, m.Flag)
		}
	}
	var out []string
	for _, r := range rep.Results {
		if r.Status != smoke.Skip {
			continue
		}
		if r.Name == smoke.CheckHTTP3 && !want.Wants(smoke.HTTP3ModuleFlag, nil) {
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

// Expect is what the smoke tests compare an image with: the lock's versions and the
// configure flags of the modules (nil: the default set), validated as the plan validates them.
func Expect(l *lock.Lock, modules []string) (smoke.Expect, error) {
	var e smoke.Expect
	for _, c := range []struct {
		name string
		dst  *string
	}{{lock.Nginx, &e.Nginx}, {lock.OpenSSL, &e.OpenSSL}, {lock.AWSLC, &e.AWSLC}, {lock.PCRE2, &e.PCRE2}} {
		if comp, ok := l.Component(c.name); ok {
			*c.dst = comp.Version
		}
	}
	opts := []plan.Option{}
	if modules != nil {
		opts = append(opts, plan.WithModules(modules...))
	}
	// Modules do not depend on the platform: the default one is as good as any.
	p, err := plan.New(l, opts...)
	if err != nil {
		return smoke.Expect{}, err
	}
	e.Modules = []string{}
	for _, name := range p.Modules {
		for _, m := range plan.Modules {
			if m.Name == name {
				e.Modules = append(e.Modules, m.Flag)
			}
		}
	}
	return e, nil
}

// ExpectRecorded is what the smoke tests compare an image with when only the image is
// given: the nginx, OpenSSL and PCRE2 versions and the modules it records (image.ReadRecord);
// Modules stays nil (reported, not compared) when the image does not record them.
func ExpectRecorded(rec image.Record) (smoke.Expect, error) {
	e := smoke.Expect{Nginx: rec.Versions[lock.Nginx], OpenSSL: rec.Versions[lock.OpenSSL], AWSLC: rec.Versions[lock.AWSLC], PCRE2: rec.Versions[lock.PCRE2]}
	if rec.Modules == nil {
		return e, nil
	}
	e.Modules = []string{}
	for _, name := range rec.Modules {
		i := slices.IndexFunc(plan.Modules, func(m plan.Module) bool { return m.Name == name })
		if i < 0 {
			return smoke.Expect{}, fmt.Errorf("the image records the module %q, which this version of nginx-forge does not know (name the expected modules with --modules, or \"any\")", name)
		}
		e.Modules = append(e.Modules, plan.Modules[i].Flag)
	}
	return e, nil
}
