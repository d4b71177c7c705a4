package daggerexec

import (
	"context"
	"fmt"

	"dagger.io/dagger"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

var _ engine.Engine = (*Executor)(nil)

// Name is "dagger".
func (e *Executor) Name() string { return engine.Dagger }

// Preflight checks in seconds that an engine is reachable (ErrNoEngine otherwise). The
// smoke tests run inside the engine, with a client the engine builds from this module's
// source (see smokeclient.go): the checkout must be found.
func (e *Executor) Preflight(ctx context.Context, smoke bool) error {
	if smoke {
		if _, err := moduleRoot(); err != nil {
			return err
		}
	}
	return checkEngine(ctx)
}

// Builder asks the plan's builder image itself which glibc it has, and the engine by which
// digest it pulled the image (ImageRef, which only a container straight from From has).
func (e *Executor) Builder(ctx context.Context, p *plan.Plan) (engine.Builder, error) {
	if err := e.Connect(ctx); err != nil {
		return engine.Builder{}, err
	}
	p, err := e.buildPlan(ctx, p)
	if err != nil {
		return engine.Builder{}, err
	}
	from := e.client.Container(dagger.ContainerOpts{Platform: daggerPlatform(builderPlatform(p))}).From(p.BuilderImage)
	ref, err := from.ImageRef(ctx)
	if err != nil {
		return engine.Builder{}, fmt.Errorf("pulling the builder %s: %w", p.BuilderImage, err)
	}
	out, err := from.WithExec(plan.GlibcVersionCommand()).Stdout(ctx)
	if err != nil {
		return engine.Builder{}, fmt.Errorf("reading the glibc version of the builder %s: %w%s", p.BuilderImage, err, stderrTail(err))
	}
	v, err := engine.GlibcFromGetconf(out)
	return engine.Builder{Glibc: v, Image: ref}, err
}

// Build runs the plan in the engine (see Run). The engine does not tell its SDK which steps
// came from its cache; each stage's record does (plan.ContainerStageRecord), so the
// builder's setup and every stage are reported as built or cached, and the stages are
// returned with the times of the run that built them.
func (e *Executor) Build(ctx context.Context, p *plan.Plan, sources map[string]string, dir string, steps progress.Sink) ([]engine.Stage, error) {
	return e.run(ctx, p, sources, dir, steps)
}
