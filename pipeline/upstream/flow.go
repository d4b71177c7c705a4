package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// orDiscard is s, or progress.Discard for a nil s: the lookups' and the update's lines are
// Detail notes, which the command shows with -v and in Actions' collapsed groups.
func orDiscard(s progress.Sink) progress.Sink {
	if s == nil {
		return progress.Discard
	}
	return s
}

// Run is one scheduled update: look up what upstream released for a lock file, and with
// Write verify and write each update on its own. `ci check-updates` fills it from flags and
// renders the Outcome (table, step outputs, pull request body); the flow itself is here.
type Run struct {
	LockFile string
	// Write downloads, verifies and writes the updates into LockFile.
	Write bool
	// KeysDir is where reviewed signer keys are trusted from and a pinned signer's key is
	// vendored; "" is lock.KeysDirBeside(LockFile).
	KeysDir string
	// Mirror, CacheDir and Keyservers are where files come from (fetcher).
	Mirror, CacheDir string
	Keyservers       []string
	// GitHubAPI, NginxOrg and Token are the release lists' roots and the optional GitHub
	// token; "" is the default root.
	GitHubAPI, NginxOrg, Token string
	// Registry looks the base images up on this host instead of their own; SkipImages not
	// at all.
	Registry   string
	SkipImages bool
	// Timeout bounds the whole run (withDeadline); 0 is no bound beyond ctx's.
	Timeout time.Duration
	// Advisories is the reviewed advisories snapshot the updates are classified by
	// (Outcome.Security); "" is pipeline/advisory's default, or the built-in copy.
	Advisories string
	// NginxAdvisories and OpenSSLAdvisories are the advisory feeds' URLs ("" is upstream's,
	// DefaultNginxAdvisories and DefaultOpenSSLAdvisories); SkipAdvisoryFeeds reads none
	// and classifies by the snapshot as it is.
	NginxAdvisories, OpenSSLAdvisories string
	SkipAdvisoryFeeds                  bool
	// Platforms are the platforms every build targets (build.yml builds each and joins them
	// into one index), as plan spells them: a new base image digest must be an index that
	// covers each. The command passes plan's supported platforms.
	Platforms []string
	// Vendored, when not nil, replaces the keys vendored in pipeline/lock/keys (updater).
	Vendored []string
	// Sink receives each request and decision as a Detail note (nil: discarded). Lookups run
	// in parallel, so it is sent to from several goroutines (progress.Sink).
	Sink progress.Sink
	// Step runs each of the two phases ("Looking up ...", "Downloading and verifying ...")
	// under its title, for the command to group their lines; nil runs them plainly.
	Step func(title string, fn func() error) error
}

// Outcome is what a Run found and did.
type Outcome struct {
	Report  *Report
	Applied []Applied // written into the lock (Written) or nothing
	Refused []Refusal // lookups that failed and updates refused, each with its fix
	Written bool
	// CheckErr is a lookup failure (its components are also in Refused).
	CheckErr error
	// WriteErr is a failure to write the lock at all (it is unchanged).
	WriteErr error
	// Security says which updates fix advisories and which versions stay affected.
	Security *Security
	// Advisories is what the feeds did to the snapshot; nil with SkipAdvisoryFeeds.
	Advisories *AdvisoryRefresh
}

// PartialError is an Outcome that wrote some updates and refused others: the update
// workflow still opens the pull request with what landed, then fails visibly.
type PartialError struct {
	LockFile string
	Refused  []Refusal
}

func (e *PartialError) Error() string {
	return fmt.Sprintf("refused %d (the other updates were written to %s): %v", len(e.Refused), e.LockFile, errors.Join(refusalErrs(e.Refused)...))
}

// Err is the Outcome as an error: nil when everything asked for was done, a *PartialError
// when some updates were written and others refused, otherwise what stopped the run.
func (o *Outcome) Err(r *Run) error {
	switch {
	case o.WriteErr != nil:
		return fmt.Errorf("updating %s (it is unchanged): %w", r.LockFile, o.WriteErr)
	case len(o.Refused) > 0 && o.Written:
		return &PartialError{LockFile: r.LockFile, Refused: o.Refused}
	case len(o.Refused) > 0 && r.Write:
		return fmt.Errorf("refused %d, %s is unchanged: %w", len(o.Refused), r.LockFile, errors.Join(refusalErrs(o.Refused)...))
	case o.CheckErr != nil:
		return fmt.Errorf("checking for updates: %w", o.CheckErr)
	}
	return nil
}

func refusalErrs(rs []Refusal) []error {
	out := make([]error, len(rs))
	for i, r := range rs {
		out[i] = fmt.Errorf("%w; to resolve: %s", r, r.Fix)
	}
	return out
}

// Do runs r. The error is for a lock that cannot be read; everything else is in the Outcome
// (Outcome.Err).
func (r *Run) Do(ctx context.Context) (*Outcome, error) {
	// Read once: the check and the rewrite work from these bytes.
	l, before, err := lock.LoadBytes(r.LockFile)
	if err != nil {
		return nil, err
	}
	// The advisories are read before anything else too: a snapshot that does not load is
	// the same kind of error as a lock that does not, and nothing has been written.
	advisories := r.Advisories
	if advisories == "" {
		advisories = advisory.DefaultPath
	}
	snap, err := advisory.Load(advisories)
	if err != nil {
		return nil, err
	}
	sink, step := r.Sink, r.Step
	if sink == nil {
		sink = progress.Discard
	}
	if step == nil {
		step = func(_ string, fn func() error) error { return fn() }
	}
	keysDir := r.ResolvedKeysDir()
	// One deadline for the whole run: an upstream that accepts connections and never
	// answers costs this much, once, whatever the number of components.
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = withDeadline(ctx, r.Timeout)
		defer cancel()
	}
	checker := r.checker(sink)
	o := &Outcome{}
	refreshed := r.startRefresh(ctx, sink, advisories, snap)
	finish := func() { o.finish(r, <-refreshed, snap, advisories) }
	o.CheckErr = step("Looking up upstream releases and base images", func() error {
		var err error
		o.Report, err = checker.Check(ctx, l)
		return err
	})
	o.Refused = o.Report.Failed
	if !r.Write || !o.Report.Changed() {
		finish()
		return o, nil
	}
	o.WriteErr = step("Downloading and verifying new releases", func() error {
		u := &updater{
			Fetcher:   r.fetcher(sink, keysDir, l.SourceDateEpoch),
			Images:    checker.Images,
			Vendored:  r.Vendored,
			Platforms: r.Platforms,
			Mirror:    r.Mirror,
			KeysDir:   keysDir,
			Sink:      sink,
		}
		var err error
		o.Applied, err = u.updateLoaded(ctx, r.LockFile, l, before, o.Report)
		return err
	})
	var re *refusedError
	if errors.As(o.WriteErr, &re) {
		o.Refused, o.WriteErr = re.Refused, nil
	}
	o.Written = o.WriteErr == nil && len(o.Applied) > 0
	finish()
	return o, nil
}

// startRefresh reads the advisory feeds alongside the lookups and downloads, under the same
// deadline: a slow or hostile feed costs at most the run's --timeout and holds back no
// update of the lock. The channel gets nil with SkipAdvisoryFeeds.
func (r *Run) startRefresh(ctx context.Context, sink progress.Sink, path string, snap *advisory.Snapshot) <-chan *AdvisoryRefresh {
	refreshed := make(chan *AdvisoryRefresh, 1)
	if r.SkipAdvisoryFeeds {
		refreshed <- nil
		return refreshed
	}
	feeds := r.client(sink)
	go func() { refreshed <- r.refreshAdvisories(ctx, feeds, path, snap, today()) }()
	return refreshed
}

// finish records the refresh a, writes the refreshed snapshot with --write, and classifies
// the updates: by the refreshed snapshot when every feed was read, else by snap.
func (o *Outcome) finish(r *Run, a *AdvisoryRefresh, snap *advisory.Snapshot, path string) {
	o.Advisories = a
	if a != nil {
		snap = a.After
		if r.Write && a.Changed() && len(a.Failed) == 0 {
			if a.Path = snapshotPath(path); a.Path == "" {
				a.WriteErr = fmt.Errorf("the advisories snapshot is the copy built into this program (no %s here): run in a checkout or give --advisories FILE to write the refresh", advisory.DefaultPath)
			} else {
				a.write()
			}
		}
	}
	o.classify(snap, r.Write)
}

// classify fills o.Security from the reviewed advisories snapshot.
func (o *Outcome) classify(snap *advisory.Snapshot, write bool) {
	if o.Report != nil {
		o.Security = security(snap, o.Report, o.Applied, write)
	}
}

// ResolvedKeysDir is where the run trusts reviewed keys from and vendors new ones: KeysDir,
// or the keys directory beside the lock. The one place that default is worked out (the
// command checks this directory before the run).
func (r *Run) ResolvedKeysDir() string {
	if r.KeysDir != "" {
		return r.KeysDir
	}
	return lock.KeysDirBeside(r.LockFile)
}

// fetcher is pipeline/source's verifying downloader for the run's new releases: r.Mirror
// serves every file as Mirror/<file name> instead of upstream (same checks), r.CacheDir ("":
// source's default) caches them, r.Keyservers replace source's default key servers, and the
// reviewed keys in keysDir are trusted like the vendored ones; a git source's prepared
// archive is stamped with the lock's epoch, as a build's is.
func (r *Run) fetcher(sink progress.Sink, keysDir string, epoch int64) Fetcher {
	opts := []source.Option{source.WithSink(sink), source.WithMirror(r.Mirror), source.WithKeysDir(keysDir), source.WithSourceDateEpoch(epoch)}
	if r.CacheDir != "" {
		opts = append(opts, source.WithCacheDir(r.CacheDir))
	}
	if r.Keyservers != nil {
		opts = append(opts, source.WithKeyserver(r.Keyservers...))
	}
	return source.New(opts...)
}

func (r *Run) checker(sink progress.Sink) *checker {
	checker := &checker{Releases: r.client(sink), Sink: sink}
	if !r.SkipImages {
		var imgOpts []ImageOption
		if r.Registry != "" {
			imgOpts = append(imgOpts, withRegistry(r.Registry))
		}
		checker.Images = NewImageResolver(imgOpts...)
	}
	return checker
}

// client is the run's HTTP client for the release lists and the advisory feeds.
func (r *Run) client(sink progress.Sink) *client {
	clientOpts := []clientOption{withSink(sink)}
	if r.GitHubAPI != "" {
		clientOpts = append(clientOpts, withGitHubAPI(r.GitHubAPI))
	}
	if r.NginxOrg != "" {
		clientOpts = append(clientOpts, withNginxOrg(r.NginxOrg))
	}
	if r.Token != "" {
		clientOpts = append(clientOpts, withToken(r.Token))
	}
	return newClient(clientOpts...)
}
