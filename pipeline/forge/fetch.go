package forge

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// fetch is a step of the progress like the stages: a cold download of OpenSSL's tarball
// over a slow link takes minutes, and the renderer's heartbeat names the step that runs.
func (b *build) fetch(ctx context.Context) error {
	b.stepStarted("fetch")
	start := time.Now()
	if err := b.fetchSources(ctx); err != nil {
		b.sink.Send(progress.StepDone{Step: "fetch", Duration: time.Since(start), Failed: true})
		return err
	}
	b.stepDone("fetch", time.Since(start), progress.Built)
	return nil
}

func (b *build) fetchSources(ctx context.Context) error {
	opts := []source.Option{source.WithSink(b.sink)}
	if b.req.Mirror != "" {
		opts = append(opts, source.WithMirror(b.req.Mirror))
	}
	if b.req.Keyservers != nil {
		opts = append(opts, source.WithKeyserver(b.req.Keyservers...))
	}
	if b.req.CacheDir != "" {
		opts = append(opts, source.WithCacheDir(filepath.Join(b.req.CacheDir, "sources")))
	}
	if b.req.MaxSourceSize > 0 {
		opts = append(opts, source.WithMaxSize(b.req.MaxSourceSize))
	}
	// Keys an update vendored beside this lock count before the program is rebuilt.
	opts = append(opts, source.WithKeysDir(lock.KeysDirBeside(b.req.lockFile())))
	start := time.Now()
	f := source.New(opts...)
	verified, err := f.FetchAll(ctx, b.l)
	if err != nil {
		return fetchError(err)
	}
	b.sources = map[string]string{}
	for name, v := range verified {
		b.sources[name] = v.Prepared
	}
	// What a plan reads besides the components: a recorded PGO profile.
	for _, t := range b.targets {
		for _, s := range t.plan.Stages {
			if _, ok := b.sources[s.Source.Component]; ok {
				continue
			}
			c, ok, err := b.l.LocatedInput(s.Source.Component, b.req.lockFile())
			if err != nil {
				return fmt.Errorf("fetching sources (nothing was built): %w", err)
			}
			if !ok {
				return fmt.Errorf("fetching sources (nothing was built): stage %s reads %q, which the lock does not have", s.Name, s.Source.Component)
			}
			v, err := f.Fetch(ctx, c)
			if err != nil {
				return fetchError(err)
			}
			b.logf("profile: %s", v)
			b.sources[c.Name] = v.Prepared
		}
	}
	b.logf("sources: %d verified in %s", len(b.sources), time.Since(start).Round(time.Millisecond))
	return nil
}

// fetchError says which flag changes the limit a download ran into.
func fetchError(err error) error {
	var se *source.SizeError
	if errors.As(err, &se) {
		return fmt.Errorf("fetching sources (nothing was built): %w (if the file really is that big, raise the limit with --max-source-size MiB)", err)
	}
	return fmt.Errorf("fetching sources (nothing was built): %w", err)
}
