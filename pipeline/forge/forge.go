package forge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/signature"

	"github.com/nginx-forge/nginx-forge/pipeline/bundle"
	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/daggerexec"
	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// Option configures Run.
type Option func(*config)

type config struct {
	now     func() time.Time
	log     io.Writer
	verbose bool
	groups  bool
	eng     engine.Engine
}

// WithLog receives the build's progress lines (default: quiet).
func WithLog(w io.Writer) Option { return func(c *config) { c.log = w } }

// WithVerbose adds downloads, verification, registry steps, the engine's own progress and
// the smoke table to the log.
func WithVerbose() Option { return func(c *config) { c.verbose = true } }

// WithGroups folds each step's lines into a collapsible group of the GitHub Actions log
// (the ::group:: and ::endgroup:: workflow commands).
func WithGroups() Option { return func(c *config) { c.groups = true } }

// WithClock sets the clock that decides which branches are past their support (tests).
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// WithEngine runs the build on e instead of the engine the request names (tests).
func WithEngine(e engine.Engine) Option { return func(c *config) { c.eng = e } }

// build is one Run's state.
type build struct {
	now     func() time.Time
	req     Request
	l       *lock.Lock
	eng     engine.Engine
	targets []*target
	sources map[string]string
	res     *Result
	logf    func(string, ...any)
	vlogf   func(string, ...any)
	signer  signature.SignerVerifier // --sign-key's, loaded before anything is built
	table   io.Writer                // the smoke table: the log when verbose
	log     io.Writer
	verbose bool
	groups  bool
	depth   int // steps started and not ended
}

// target is one platform's build: its plan, base, and (once built) its image.
type target struct {
	plan *plan.Plan
	base v1.Image
	img  v1.Image
	sbom []byte
	res  *PlatformResult
}

// Run does the build req asks for. The Result says what was done, also when err is not nil
// (the steps that ran).
func Run(ctx context.Context, req Request, opts ...Option) (*Result, error) {
	c := config{log: io.Discard, now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	b := &build{now: c.now, req: req, res: &Result{Repo: req.Repo}, log: c.log, verbose: c.verbose, groups: c.groups, table: io.Discard}
	b.logf = func(format string, a ...any) { fmt.Fprintf(c.log, format+"\n", a...) }
	b.vlogf = func(string, ...any) {}
	if c.verbose {
		b.vlogf, b.table = b.logf, c.log
	}
	if err := b.resolve(); err != nil {
		return b.res, err
	}
	if req.SignKey != "" {
		// A key that cannot sign fails now, not after a build of several minutes.
		if !req.Push {
			return b.res, errors.New("a signing key (--sign-key) signs what --push publishes: add --push, or leave the key out")
		}
		var err error
		if b.signer, err = sign.LoadKey(req.SignKey); err != nil {
			return b.res, err
		}
	}
	b.eng = c.eng
	if b.eng == nil {
		var err error
		if b.eng, err = b.newEngine(); err != nil {
			return b.res, err
		}
	}
	defer b.eng.Close()

	steps := []struct {
		name string
		run  func(context.Context) error
	}{
		{"preflight", b.preflight},
		{"fetch", b.fetch},
		{"build", b.buildAll},
		{"smoke", b.smokeAll},
		{"output", b.writeOutput},
		{"publish", b.publish},
	}
	for _, s := range steps {
		start := time.Now()
		err := s.run(ctx)
		b.res.Steps = append(b.res.Steps, Step{Name: s.name, Duration: time.Since(start)})
		if err != nil {
			b.endGroup()
			return b.res, err
		}
	}
	return b.res, nil
}

// resolve loads the lock, applies the image overrides and makes one plan per platform.
func (b *build) resolve() error {
	l := b.req.Lock
	if l == nil {
		var err error
		if l, err = LoadLock(b.req.LockFile, b.vlogf); err != nil {
			return err
		}
	}
	// The outputs' paths fail now, not after the build they would have received.
	if b.req.Tree != "" {
		if err := CheckNewDir(b.req.Tree); err != nil {
			return fmt.Errorf("%w: install tree (--tree): %v", ErrUsage, err)
		}
	}
	if b.req.Output != "" {
		if err := CheckOutputPath(b.req.Output); err != nil {
			return fmt.Errorf("%w: image output (--output): %v", ErrUsage, err)
		}
	}
	if r := b.req; r.ProfileDir != "" && (r.Push || r.Output != "" || r.Tree != "" || r.Repo != "" || (r.Optimize != "" && r.Optimize != plan.OptimizePGO)) {
		return fmt.Errorf("%w: recording a PGO profile (profile directory %s) builds only the training: drop the image, tree and optimize options", ErrUsage, r.ProfileDir)
	}
	// A copy: the image overrides must not change the caller's lock.
	cp := *l
	l = &cp
	if err := overrideImage(&l.Images.Builder, b.req.BuilderImage); err != nil {
		return fmt.Errorf("%w: builder image %q: %v", ErrUsage, b.req.BuilderImage, err)
	}
	if err := overrideImage(&l.Images.Runtime, b.req.RuntimeImage); err != nil {
		return fmt.Errorf("%w: runtime image %q: %v", ErrUsage, b.req.RuntimeImage, err)
	}
	b.l = l
	for _, pl := range b.req.platforms() {
		opts := []plan.Option{plan.WithPlatform(pl), plan.WithCPU(b.req.CPU), plan.WithJobs(b.req.Jobs), plan.WithOptimize(b.req.Optimize)}
		if b.req.Modules != nil {
			opts = append(opts, plan.WithModules(b.req.Modules...))
		}
		newPlan := plan.New
		if b.req.ProfileDir != "" {
			newPlan = plan.NewTraining
		}
		p, err := newPlan(l, opts...)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUsage, err)
		}
		pr := &PlatformResult{Platform: p.Platform.String(), CPU: p.CPU}
		b.res.Platforms = append(b.res.Platforms, *pr)
		b.targets = append(b.targets, &target{plan: p, res: &b.res.Platforms[len(b.res.Platforms)-1]})
	}
	if p := b.targets[0].plan; b.req.ProfileDir == "" && (b.req.Optimize == "" || b.req.Optimize == plan.OptimizeAuto) {
		if p.Optimize == plan.OptimizePGO {
			b.logf("optimize: pgo (auto: the lock records a PGO profile for this build, sha256 %s)", p.ProfileSHA256)
		} else {
			b.logf("optimize: %s (auto: the lock records no PGO profile for this build; go run ./ci pgo-profile records one)", p.Optimize)
		}
	}
	for _, w := range b.targets[0].plan.Warnings {
		b.logf("warning: %s", w)
	}
	// A published image must not rest on a checksum alone without anyone having said why.
	if missing := l.UnsignedWithoutReason(); len(missing) > 0 && b.req.Push {
		return fmt.Errorf("%w: refusing to publish: %s has no upstream signature in the lock and no \"unsigned\" reason: add its signature (url and signer fingerprints), or \"unsigned\": \"<why>\" to its lock entry in a reviewed change", ErrUsage, strings.Join(missing, ", "))
	}
	// Publishing a superseded or end-of-life branch is allowed (a pinned rebuild must stay
	// possible) but never silent.
	if b.req.Push {
		for _, w := range upstream.BranchWarnings(l, b.now()) {
			b.logf("warning: %s", w)
			b.res.Warnings = append(b.res.Warnings, w)
		}
	}
	for _, c := range l.Components {
		switch {
		case c.Signature != nil:
		case c.Unsigned != "":
			b.logf("unsigned: %s %s: only its SHA-256 is checked (%s)", c.Name, c.Version, c.Unsigned)
		default:
			b.logf("warning: %s %s has no upstream signature in the lock: only its SHA-256 is checked", c.Name, c.Version)
		}
	}
	return nil
}

// overrideImage applies "REF" or "REF@sha256:..." to dst, so everything downstream (plan,
// annotations, SBOM) names what was used.
func overrideImage(dst *lock.Image, ref string) error {
	if ref == "" {
		return nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return fmt.Errorf("parsing reference: %v", err)
	}
	img := lock.Image{Ref: ref}
	if d, ok := r.(name.Digest); ok {
		img = lock.Image{Ref: strings.SplitN(ref, "@", 2)[0], Digest: d.DigestStr()}
	}
	*dst = img
	return nil
}

func (b *build) newEngine() (engine.Engine, error) {
	switch b.req.Engine {
	case "host":
		cache := b.req.CacheDir
		if cache == "" {
			var err error
			if cache, err = DefaultCacheDir(); err != nil {
				return nil, err
			}
		}
		return host.NewEngine(host.WithCacheDir(cache), host.WithJobs(b.req.Jobs), host.WithLogf(b.vlogf)), nil
	case "dagger":
		opts := []daggerexec.Option{daggerexec.WithLogf(b.vlogf)}
		if b.verbose {
			opts = append(opts, daggerexec.WithProgress(b.log))
		}
		return daggerexec.New(opts...), nil
	}
	return nil, fmt.Errorf("%w: engine %q: use dagger or host", ErrUsage, b.req.Engine)
}

func (b *build) runtimeRef() string { return b.l.Images.Runtime.Pinned() }

func (b *build) publishOptions() []image.PublishOption {
	opts := []image.PublishOption{image.WithKeychain(image.Keychain()), image.WithLogf(b.vlogf)}
	if b.req.Insecure {
		opts = append(opts, image.WithInsecure())
	}
	return opts
}

// preflight: what can fail without compiling fails now, before any download. On a cold
// Dagger engine it pulls the builder image, which takes a while: it is a step of the
// progress like the others.
func (b *build) preflight(ctx context.Context) error {
	b.progress(engine.Event{Step: "preflight"})
	start := time.Now()
	if err := b.preflightChecks(ctx); err != nil {
		return err
	}
	b.progress(engine.Event{Step: "preflight", Done: true, Duration: time.Since(start), Cache: engine.Built})
	return nil
}

func (b *build) preflightChecks(ctx context.Context) error {
	wants := b.req.WantsImage()
	if err := b.eng.Preflight(ctx, wants && !b.req.NoSmoke); err != nil {
		return err
	}
	if !wants {
		return nil
	}
	ref := b.runtimeRef()
	for _, t := range b.targets {
		pl := v1.Platform{OS: t.plan.Platform.OS, Architecture: t.plan.Platform.Arch}
		var err error
		if t.base, err = image.PullBase(ctx, ref, pl, b.publishOptions()...); err != nil {
			return fmt.Errorf("pulling the runtime image %s for %s (nothing was built; --runtime-image overrides it): %w", ref, t.plan.Platform, err)
		}
		// The binary needs the glibc symbol versions of the builder: an older runtime glibc
		// fails at start with "GLIBC_2.xx not found".
		builderV, err := b.eng.BuilderGlibc(ctx, t.plan)
		if err != nil {
			return fmt.Errorf("checking the builder for %s (nothing was built): %w", t.plan.Platform, err)
		}
		baseV, err := image.GlibcVersion(t.base)
		if err != nil {
			return fmt.Errorf("reading the glibc version of the runtime image %s (nothing was built): %w", ref, err)
		}
		if err := image.CompareGlibc(builderV, baseV); err != nil {
			return fmt.Errorf("runtime image %s for %s (nothing was built): %w", ref, t.plan.Platform, err)
		}
	}
	return nil
}

// lockFile is the lock's path: what its keys directory and in-repository profiles are
// relative to.
func (b *build) lockFile() string {
	if b.req.LockFile == "" {
		return lock.DefaultPath
	}
	return b.req.LockFile
}

func (b *build) fetch(ctx context.Context) error {
	opts := []source.Option{source.WithLogf(b.vlogf)}
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
	opts = append(opts, source.WithKeysDir(lock.KeysDirBeside(b.lockFile())))
	start := time.Now()
	f := source.New(opts...)
	verified, err := f.FetchAll(ctx, b.l)
	if err != nil {
		return fetchError(err)
	}
	b.sources = map[string]string{}
	for name, v := range verified {
		b.sources[name] = v.Path
	}
	// What a plan reads besides the components: a recorded PGO profile.
	for _, t := range b.targets {
		for _, s := range t.plan.Stages {
			if _, ok := b.sources[s.Source.Component]; ok {
				continue
			}
			c, ok, err := b.l.LocatedInput(s.Source.Component, b.lockFile())
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
			b.sources[c.Name] = v.Path
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

func (b *build) buildAll(ctx context.Context) error {
	for _, t := range b.targets {
		if err := b.buildTarget(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// buildTarget builds one platform's install tree on the engine and, when an image is
// wanted, assembles the image and its SBOM.
func (b *build) buildTarget(ctx context.Context, t *target) error {
	p := t.plan
	treeDir := b.req.Tree
	if treeDir == "" {
		tmp, err := os.MkdirTemp("", "nginx-forge-tree-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		treeDir = tmp
	}
	start := time.Now()
	stages, err := b.eng.Build(ctx, p, b.sources, treeDir, func(e engine.Event) {
		e.Step = fmt.Sprintf("%s (%s)", e.Step, p.Platform)
		b.progress(e)
	})
	if err != nil {
		return err
	}
	t.res.Stages = stages
	b.printStages(stages)
	if b.req.ProfileDir != "" {
		return b.recordProfile(t, treeDir)
	}
	b.logf("build: install tree for %s (cpu %s) took %s", p.Platform, p.CPU, time.Since(start).Round(time.Second))
	if b.req.Tree != "" {
		if b.req.Bundle {
			if err := writeBundle(b.req.Tree, b.logf); err != nil {
				return err
			}
		}
		b.logf("tree: %s", b.req.Tree)
	}
	if !b.req.WantsImage() {
		return nil
	}
	step := fmt.Sprintf("assemble (%s)", p.Platform)
	b.progress(engine.Event{Step: step})
	start = time.Now()
	libcrypt, err := b.eng.PackageVersion(ctx, p, plan.LibcryptPackage)
	if err != nil {
		return err
	}
	imgOpts := []image.Option{image.WithBaseRef(b.runtimeRef()), image.WithLibcrypt(libcrypt), image.WithOptimize(p.Optimize), image.WithModules(p.Modules)}
	switch {
	case p.ProfileSHA256 != "":
		imgOpts = append(imgOpts, image.WithProfile("sha256:"+p.ProfileSHA256))
	case p.Optimize == plan.OptimizePGO:
		imgOpts = append(imgOpts, image.WithProfile(image.ProfileTrained))
	}
	if b.req.Revision != "" {
		imgOpts = append(imgOpts, image.WithRevision(b.req.Revision))
	}
	if t.img, err = image.Assemble(t.base, treeDir, b.l, imgOpts...); err != nil {
		return fmt.Errorf("assembling the image for %s: %w", p.Platform, err)
	}
	if t.sbom, err = image.SBOM(t.img, b.l, imgOpts...); err != nil {
		return fmt.Errorf("writing the SBOM for %s: %w", p.Platform, err)
	}
	// Layers are computed now, while the tree (a temporary directory) exists.
	digest, err := t.img.Digest()
	if err != nil {
		return fmt.Errorf("computing the image digest for %s: %w", p.Platform, err)
	}
	size, err := image.SizeOf(t.img)
	if err != nil {
		return fmt.Errorf("measuring the image for %s: %w", p.Platform, err)
	}
	t.res.Digest, t.res.Size = digest.String(), size
	b.progress(engine.Event{Step: step, Done: true, Duration: time.Since(start), Cache: engine.Built})
	b.logf("image: %s (%s on %s), %s", digest, p.Platform, b.runtimeRef(), size)
	return nil
}

// progress prints a line when a step starts and one when it ends, with its duration and
// whether it came from a cache; with groups, each step's lines are one collapsible group.
func (b *build) progress(e engine.Event) {
	if !e.Done {
		// Actions groups do not nest: a step inside another (the smoke test of a pushed
		// digest) stays in its parent's group.
		if b.groups && b.depth == 0 {
			fmt.Fprintf(b.log, "::group::%s\n", e.Step)
		}
		b.depth++
		b.logf("%s: started", e.Step)
		return
	}
	d := e.Duration.Round(100 * time.Millisecond)
	switch e.Cache {
	case engine.Built:
		b.logf("%s: done in %s", e.Step, d)
	case engine.Cached:
		b.logf("%s: done in %s, from cache", e.Step, d)
	default:
		b.logf("%s: done in %s (the engine does not report whether it came from its cache)", e.Step, d)
	}
	if b.depth--; b.depth == 0 && b.groups {
		fmt.Fprintln(b.log, "::endgroup::")
	}
}

// endGroup closes an open group when a step failed before its end line.
func (b *build) endGroup() {
	if b.depth > 0 && b.groups {
		fmt.Fprintln(b.log, "::endgroup::")
	}
	b.depth = 0
}

// printStages is the engine's account of the stages: for a cached stage, the timings are
// those of the run that built it (what a cold build of it costs on the machine that built it).
func (b *build) printStages(stages []engine.Stage) {
	if len(stages) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b.log, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tresult\tbuild wall\tuser\tsys\t")
	for _, s := range stages {
		state := "built"
		if s.Cached {
			state = "cached"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Name, state, dur(s.Wall), dur(s.User), dur(s.Sys))
	}
	tw.Flush()
}

func dur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// writeBundle adds the bare-metal files (systemd unit, sysusers.d, sysctl.d) to the tree.
func writeBundle(tree string, logf func(string, ...any)) error {
	conf, err := os.ReadFile(tree + "/etc/nginx/nginx.conf")
	if err != nil {
		return fmt.Errorf("--bundle: reading the tree's nginx.conf: %w", err)
	}
	files, err := bundle.Write(tree, bundle.Options{NginxConf: conf})
	if err != nil {
		return fmt.Errorf("--bundle: %w", err)
	}
	logf("bundle: %s", strings.Join(files, ", "))
	return nil
}

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
	b.progress(engine.Event{Step: step})
	start := time.Now()
	rep, err := b.eng.Smoke(ctx, t.plan, img, smoke.Options{Expect: expect})
	b.progress(engine.Event{Step: step, Done: true, Duration: time.Since(start), Cache: engine.Built})
	if err != nil {
		return rep, err
	}
	t.res.Smoke = &rep
	rep.Print(b.table)
	err = rep.Err()
	if notRun := notRun(rep, t.plan); err == nil && len(notRun) > 0 {
		err = fmt.Errorf("smoke checks not run: %s (every check must run before an image is written or a tag moves; a check the engine cannot run is a failure)", strings.Join(notRun, ", "))
	}
	if err != nil {
		if !b.verbose {
			rep.Print(b.log)
		}
		return rep, err
	}
	p, f, sk := rep.Counts()
	b.logf("smoke (%s): %d passed, %d failed, %d skipped", t.plan.Platform, p, f, sk)
	return rep, nil
}

// notRun names the checks of rep that were skipped, with the reason: each is a failure of
// the build's gate. The one skip that is not is HTTP/3 on a build without the http_v3
// module: there is nothing to check (the other optional modules' checks pass by checking
// the absence).
func notRun(rep smoke.Report, p *plan.Plan) []string {
	var out []string
	for _, r := range rep.Results {
		if r.Status != smoke.Skip {
			continue
		}
		if r.Name == smoke.CheckHTTP3 && !slices.Contains(p.Modules, plan.ModuleHTTP3) {
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

// writeOutput writes --output once the image passed its smoke test (or was published).
func (b *build) writeOutput(ctx context.Context) error {
	if b.req.Output == "" || !b.req.WantsImage() || b.req.Push {
		return nil
	}
	return b.output()
}

func (b *build) output() error {
	t := b.targets[0]
	refName := outputRefName(b.req.Repo, b.req.Tags, b.l)
	created := time.Unix(b.l.SourceDateEpoch, 0).UTC()
	if err := image.WriteOutput(b.req.Output, t.img, refName, t.sbom, created); err != nil {
		return fmt.Errorf("writing --output %s: %w", b.req.Output, err)
	}
	b.logf("output: %s (as %s; SBOM %s.spdx.json)", b.req.Output, refName, b.req.Output)
	return nil
}

// outputRefName names the image inside an --output tarball: the first tag asked for, or the
// repository with the nginx version.
func outputRefName(repo string, tags []string, l *lock.Lock) string {
	if repo == "" {
		repo = "nginx-forge"
	}
	if len(tags) == 0 {
		tags = image.DefaultTags(l, false)
	}
	return repo + ":" + tags[0]
}

// publish pushes each platform's image by digest and smoke-tests exactly that digest, then
// moves the tags: on the image itself or, for several platforms, on the index of them.
// --output is written only after that.
func (b *build) publish(ctx context.Context) error {
	if !b.req.Push {
		return nil
	}
	tags := b.req.Tags
	if len(tags) == 0 && !b.req.DigestOnly {
		tags = image.Tags(b.l, b.req.TagEvent())
	}
	imageTags := tags
	if len(b.targets) > 1 {
		imageTags = nil
	}
	created := time.Unix(b.l.SourceDateEpoch, 0).UTC()
	var pub *image.Published
	var digestRefs []string
	for _, t := range b.targets {
		opts := append(b.publishOptions(), image.WithVerify(b.verifier(t)), image.WithSBOM(t.sbom, created))
		opts = append(opts, b.signOptions()...)
		step := fmt.Sprintf("push (%s)", t.plan.Platform)
		b.progress(engine.Event{Step: step})
		start := time.Now()
		var err error
		if pub, err = image.Publish(ctx, t.img, b.req.Repo, imageTags, opts...); err != nil {
			b.endGroup()
			return err
		}
		state, cache := "pushed", engine.Built
		if pub.AlreadyPresent {
			state, cache = "already in the registry", engine.Cached
		}
		b.progress(engine.Event{Step: step, Done: true, Duration: time.Since(start), Cache: cache})
		b.logf("push: %s (%s) %s, smoke-tested", pub.Digest, t.plan.Platform, state)
		digestRefs = append(digestRefs, pub.Digest.String())
	}
	if len(b.targets) > 1 {
		var err error
		if pub, err = image.Index(ctx, b.req.Repo, digestRefs, tags, append(b.publishOptions(), b.signOptions()...)...); err != nil {
			return err
		}
		b.logf("push: index %s of %s", pub.Digest, strings.Join(b.req.platforms(), ", "))
	}
	var tagRefs []string
	for _, t := range pub.Tags {
		tagRefs = append(tagRefs, t.String())
	}
	b.logf("push: tags moved to %s: %s", pub.Digest.DigestStr(), listOrNone(tagRefs))
	b.res.Published = pub
	if b.req.Output != "" {
		return b.output()
	}
	return nil
}

// signOptions sign each pushed image and the index of several (so a verifier that resolves
// a tag to either finds a signature) with --sign-key's key; without a key it does nothing.
func (b *build) signOptions() []image.PublishOption {
	if b.signer == nil {
		return nil
	}
	return []image.PublishOption{image.WithSign(func(ctx context.Context, ref name.Digest, ropts []remote.Option) error {
		sig, err := sign.Sign(ctx, ref, b.signer, ropts...)
		if err != nil {
			return err
		}
		b.logf("push: signed %s (signature %s)", ref.DigestStr(), sig.DigestStr())
		return nil
	})}
}

// verifier is the smoke test Publish runs on the pushed digest: the image pulled back from
// the registry, started by the engine.
func (b *build) verifier(t *target) image.VerifyFunc {
	return func(ctx context.Context, ref name.Digest) error {
		pushed, err := remote.Image(ref, remote.WithAuthFromKeychain(image.Keychain()), remote.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("pulling %s back: %w", ref, err)
		}
		fmt.Fprintf(b.table, "smoke checks of %s\n\n", ref)
		_, err = b.smoke(ctx, t, pushed)
		return err
	}
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Expect is what the smoke tests compare an image with: the lock's versions and the
// configure flags of the modules (nil: the default set), validated as the plan validates them.
func Expect(l *lock.Lock, modules []string) (smoke.Expect, error) {
	var e smoke.Expect
	for _, c := range []struct {
		name string
		dst  *string
	}{{lock.Nginx, &e.Nginx}, {lock.OpenSSL, &e.OpenSSL}, {lock.PCRE2, &e.PCRE2}} {
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
		return smoke.Expect{}, fmt.Errorf("%w: %v", ErrUsage, err)
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
	e := smoke.Expect{Nginx: rec.Versions[lock.Nginx], OpenSSL: rec.Versions[lock.OpenSSL], PCRE2: rec.Versions[lock.PCRE2]}
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
