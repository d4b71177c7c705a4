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
	deadline := b.req.FetchTimeout
	if deadline <= 0 {
		deadline = DefaultFetchTimeout
	}
	ctx, cancel := context.WithTimeoutCause(ctx, deadline, errFetchDeadline)
	defer cancel()
	start := time.Now()
	f := source.New(b.sourceOptions()...)
	verified, err := f.FetchAll(ctx, b.l)
	if err != nil {
		return fetchError(ctx, deadline, err)
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
				return fetchError(ctx, deadline, err)
			}
			b.sink.Send(progress.Infof("profile: %s", v))
			b.sources[c.Name] = v.Prepared
		}
	}
	b.sink.Send(progress.Infof("sources: %d verified in %s", len(b.sources), time.Since(start).Round(time.Millisecond)))
	return nil
}

// sourceOptions are the fetcher's options for this request (its cache under --cache).
func (b *build) sourceOptions() []source.Option {
	// A git-pinned source's prepared archive is stamped with the lock's epoch: it is then
	// a function of the pin and the epoch, as the stage keys assume.
	opts := []source.Option{source.WithSink(b.sink), source.WithSourceDateEpoch(b.l.SourceDateEpoch)}
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
	if b.req.SourceTimeout > 0 {
		opts = append(opts, source.WithStallTimeout(b.req.SourceTimeout))
	}
	// Keys an update vendored beside this lock count before the program is rebuilt.
	return append(opts, source.WithKeysDir(lock.KeysDirBeside(b.req.lockFile())))
}

// errFetchDeadline is the cause of the fetch's deadline: what ended the fetch, told apart
// from a signal and from anything about the sources.
var errFetchDeadline = errors.New("the deadline of fetching the sources")

// fetchError says which flag changes the limit a download ran into. A fetch its deadline
// ended says so, and that nothing was judged: the sources may be fine (a slow link).
func fetchError(ctx context.Context, deadline time.Duration, err error) error {
	if errors.Is(context.Cause(ctx), errFetchDeadline) {
		return fmt.Errorf("fetching sources (nothing was built): stopped at the %s deadline of fetching, checking and unpacking the sources (--fetch-timeout), before they were judged; nothing partial was cached: give a longer --fetch-timeout, or run again: %w", deadline, err)
	}
	if gs := (*source.GitStallError)(nil); errors.As(err, &gs) {
		return fmt.Errorf("fetching sources (nothing was built): %w (the stall time is --source-timeout: give a longer one for a server that is slow to answer, or check the repository's URL)", err)
	}
	var se *source.SizeError
	if errors.As(err, &se) {
		return fmt.Errorf("fetching sources (nothing was built): %w (if the file really is that big, raise the limit with --max-source-size MiB)", err)
	}
	return fmt.Errorf("fetching sources (nothing was built): %w", err)
}
