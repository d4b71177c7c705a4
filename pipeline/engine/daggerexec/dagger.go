// Package daggerexec runs a build plan (pipeline/plan) in containers on a Dagger engine, the
// production path of `go run ./ci build`. It is a mapping of the plan and nothing more: the
// builder image, packages, environment, files and scripts all come from the Plan (and its
// container helpers, shared with the rendered Dockerfile); this package adds no flag or
// script of its own, and a test keeps it that way.
//
// The pipeline, top to bottom:
//
//	connect    fail fast without an engine, then dagger.Connect (the SDK reads its own
//	           environment: DAGGER_SESSION_PORT, _EXPERIMENTAL_DAGGER_RUNNER_HOST, ...)
//	builder    plan.BuilderImage + plan.BuildPackages through apt cache volumes
//	stages     one container per plan stage: the builder, the stage's verified tarball (read
//	           from the host, where pipeline/source checked its SHA-256 and PGP signature),
//	           its dependencies' OUT directories, its files and environment, one exec of its
//	           script. Each stage is its own chain from the builder, so the engine caches it
//	           by exactly its inputs: a new nginx reuses the zlib, PCRE2 and OpenSSL steps.
//	export     the final stage's OUT is written to a host directory: the install tree, which
//	           pipeline/image assembles into the image (there is no second assembly here).
//	smoke      Serve imports the assembled image into the engine, runs it as a service with
//	           its ports forwarded to the host, and gives pipeline/smoke a Target.
//
// Pushing is done by the host with go-containerregistry (pipeline/image), not by the
// engine, so registry credentials never enter the engine at all.
package daggerexec

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"dagger.io/dagger"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Executor runs plans on a Dagger engine. Create it with New; Close it when done.
type Executor struct {
	sink   progress.Sink
	output *lineNotes // the engine's own progress output, nil when not asked for
	client *dagger.Client
	// runID names this executor's run in the stage records (plan.StageRunVar): a record
	// naming another run is one the engine took from its cache.
	runID string
}

// Option configures an Executor.
type Option func(*Executor)

// WithProgress sends this package's progress lines to sink as Detail notes (default:
// discarded).
func WithProgress(sink progress.Sink) Option {
	return func(e *Executor) { e.sink = sink }
}

// WithEngineOutput sends the Dagger engine's own progress output to sink, one Detail note a
// line (default: discarded), so the engine's output goes through the one progress sink (and
// its redaction) too.
func WithEngineOutput(sink progress.Sink) Option {
	return func(e *Executor) { e.output = &lineNotes{sink: sink} }
}

// New returns an executor; it connects on first use (or on Connect).
func New(opts ...Option) *Executor {
	e := &Executor{}
	for _, o := range opts {
		o(e)
	}
	if e.sink == nil {
		e.sink = progress.Discard
	}
	var id [16]byte
	_, _ = rand.Read(id[:]) // crypto/rand.Read never fails (Go 1.24+)
	e.runID = hex.EncodeToString(id[:])
	return e
}

// Connect checks in seconds that an engine is reachable (ErrNoEngine otherwise, suggesting
// --engine host), then opens the session. Run and Serve call it when needed.
func (e *Executor) Connect(ctx context.Context) error {
	if e.client != nil {
		return nil
	}
	via, err := preflight(ctx)
	if err != nil {
		return err
	}
	e.sink.Send(progress.Detailf("dagger: connecting through %s", via))
	var out io.Writer = io.Discard
	if e.output != nil {
		out = e.output
	}
	c, err := dagger.Connect(ctx, dagger.WithLogOutput(out))
	if err != nil {
		return fmt.Errorf("%w: connecting through %s failed (no engine answered, or none could be started); build on this machine with --engine host, or start an engine: %w", ErrNoEngine, via, err)
	}
	e.client = c
	return nil
}

// Close ends the session.
func (e *Executor) Close() error {
	if e.client == nil {
		return nil
	}
	err := e.client.Close()
	e.client = nil
	if e.output != nil {
		e.output.flush()
	}
	return err
}

// Run builds p from sources (component name -> path of its verified tarball, as for the
// host executor) and writes the install tree, the final stage's OUT, to treeDir, which must
// be new or empty. Bad input (a tarball whose SHA-256 is not the plan's, a non-empty
// treeDir) is refused before the engine is contacted.
func (e *Executor) Run(ctx context.Context, p *plan.Plan, sources map[string]string, treeDir string) error {
	abs, err := engine.CheckInput(p, sources, treeDir)
	if err != nil {
		return fmt.Errorf("dagger executor: %w", err)
	}
	_, err = e.run(ctx, p, sources, abs, progress.Discard)
	return err
}

// run builds a plan whose input was checked (Run, or engine.Checked around Build) into the
// absolute directory abs.
func (e *Executor) run(ctx context.Context, p *plan.Plan, sources map[string]string, abs string, steps progress.Sink) ([]engine.Stage, error) {
	for _, w := range p.Warnings {
		e.sink.Send(progress.Detailf("dagger: warning: %s", w))
	}
	if p.Native {
		e.sink.Send(progress.Detailf("dagger: warning: the binary targets the CPU of the engine's machine, not necessarily this one's or the servers'"))
	}
	if err := e.Connect(ctx); err != nil {
		return nil, err
	}
	p, err := e.buildPlan(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.Cross != nil {
		e.sink.Send(progress.Detailf("dagger: cross-compiling for %s on a %s builder (%s toolchain; nginx's configure tests through %s)", p.Platform, p.Cross.Build, p.Cross.Triple, p.Cross.Emulator))
	}

	builder, err := e.builder(ctx, p)
	if err != nil {
		return nil, err
	}
	private, err := os.MkdirTemp("", "nginx-forge-sources-")
	if err != nil {
		return nil, fmt.Errorf("dagger executor: %w", err)
	}
	defer os.RemoveAll(private)
	ctrs, outs, err := e.stages(p, builder, sources, private)
	if err != nil {
		return nil, err
	}
	tree := outs[p.Final]

	// The builder, then each stage, is evaluated on its own, in plan order, so that its
	// start and end can be reported, and whether it came from the engine's cache (its
	// stage record); the export then reads the results from the cache. The engine would
	// otherwise run independent stages side by side: on small runners the compile of each
	// already uses every core.
	e.sink.Send(progress.Detailf("dagger: building %d stages for %s", len(p.Stages), p.Platform))
	step := func(name string, ctr *dagger.Container, record string) (engine.Stage, error) {
		steps.Send(progress.StepStarted{Step: name})
		start := time.Now()
		data, err := ctr.File(record).Contents(ctx)
		if err != nil {
			return engine.Stage{}, fmt.Errorf("dagger executor: building %s for %s: %w%s", name, p.Platform, err, stderrTail(err))
		}
		r, err := plan.ParseStageRecord(data)
		if err != nil {
			return engine.Stage{}, fmt.Errorf("dagger executor: %s for %s: %w", name, p.Platform, err)
		}
		st := engine.Stage{Name: name, Cached: r.Run != e.runID, Wall: r.Wall, User: r.User, Sys: r.Sys}
		cache := progress.Built
		if st.Cached {
			cache = progress.Cached
		}
		steps.Send(progress.StepDone{Step: name, Duration: time.Since(start), Cache: cache})
		return st, nil
	}
	if _, err := step(builderStep, builder, plan.ContainerBuilderRecord); err != nil {
		return nil, err
	}
	var stages []engine.Stage
	for _, s := range p.Stages {
		st, err := step(s.Name, ctrs[s.Name], plan.ContainerStageRecord)
		if err != nil {
			return stages, err
		}
		stages = append(stages, st)
	}
	e.sink.Send(progress.Detailf("dagger: exporting the install tree to %s", abs))
	if _, err := tree.Export(ctx, abs); err != nil {
		return stages, fmt.Errorf("dagger executor: building for %s: %w%s", p.Platform, err, stderrTail(err))
	}
	return stages, nil
}

// builderStep names the builder's setup (the plan's packages installed in its builder image)
// in the progress lines, before the stages.
const builderStep = "builder"

// stderrTail is the end of a failed step's standard error, which the engine's error
// message leaves out.
func stderrTail(err error) string {
	var ee *dagger.ExecError
	if !errors.As(err, &ee) || ee.Stderr == "" {
		return ""
	}
	return fmt.Sprintf(" (exit code %d); the step's last output:\n%s", ee.ExitCode, toolbox.TailLines(ee.Stderr, 40))
}

// buildPlan is the plan this engine's builders run for p (plan.ForBuild): p itself when the
// engine's own platform is p's, else p cross-compiled by a builder of the engine's platform,
// so the compilers run natively and only nginx's configure tests are emulated.
func (e *Executor) buildPlan(ctx context.Context, p *plan.Plan) (*plan.Plan, error) {
	arch, err := e.engineArch(ctx)
	if err != nil {
		return nil, err
	}
	return p.ForBuild(arch)
}

// engineArch is the architecture of the engine's own platform (amd64 of linux/amd64).
func (e *Executor) engineArch(ctx context.Context) (string, error) {
	pl, err := e.client.DefaultPlatform(ctx)
	if err != nil {
		return "", fmt.Errorf("dagger executor: asking the engine for its platform: %w", err)
	}
	os, arch, _ := strings.Cut(string(pl), "/")
	arch, _, _ = strings.Cut(arch, "/") // linux/arm64/v8: the architecture
	if os != "linux" || arch == "" {
		return "", fmt.Errorf("dagger executor: the engine runs on %q, not a linux platform", pl)
	}
	return arch, nil
}

// builderPlatform is the platform p's builder container runs on: the build machine's in a
// cross plan.
func builderPlatform(p *plan.Plan) plan.Platform {
	if p.Cross != nil {
		return p.Cross.Build
	}
	return p.Platform
}

// daggerPlatform is p as the Dagger API names a platform: the one conversion, for the
// containers this engine starts.
func daggerPlatform(p plan.Platform) dagger.Platform { return dagger.Platform(p.String()) }

// builder is the plan's builder image with its build packages installed. The apt caches are
// cache volumes (per builder image and platform: package lists of different releases must
// not mix) mounted only for this step, so no stage depends on their contents. A cross
// builder also gets its image's target-platform apt sources when they differ from its own
// (plan.ContainerTargetAptDir).
func (e *Executor) builder(ctx context.Context, p *plan.Plan) (*dagger.Container, error) {
	c := e.client.Container(dagger.ContainerOpts{Platform: daggerPlatform(builderPlatform(p))}).
		From(p.BuilderImage)
	if p.Cross != nil {
		target, err := e.targetAptSources(ctx, p, c)
		if err != nil {
			return nil, err
		}
		if target != nil {
			c = c.WithDirectory(plan.ContainerTargetAptDir, target)
		}
	}
	for _, dir := range plan.ContainerAptCacheDirs {
		c = c.WithMountedCache(dir, e.client.CacheVolume(cacheKey(p.BuilderImage, p.Platform.String(), dir)),
			dagger.ContainerWithMountedCacheOpts{Sharing: dagger.CacheSharingModeLocked})
	}
	c = c.WithVolatileVariable(plan.StageRunVar, e.runID).WithExec(p.ContainerSetupCommand())
	for _, dir := range plan.ContainerAptCacheDirs {
		c = c.WithoutMount(dir)
	}
	return c, nil
}

// targetAptSources is the apt sources of the builder image's variant for a cross plan's
// target, when the image has that variant and its sources differ from the builder's own (an
// Ubuntu image: another archive per architecture); nil otherwise (a Debian image, or an
// image of one platform, whose sources then serve the target too).
func (e *Executor) targetAptSources(ctx context.Context, p *plan.Plan, builder *dagger.Container) (*dagger.Directory, error) {
	target := e.client.Container(dagger.ContainerOpts{Platform: daggerPlatform(p.Platform)}).From(p.BuilderImage)
	if _, err := target.ImageRef(ctx); err != nil {
		e.sink.Send(progress.Detailf("dagger: the builder %s has no %s variant (%v): its own package sources serve %s", p.BuilderImage, p.Platform, firstLine(nil, err), p.Platform.Arch))
		return nil, nil
	}
	pick := func(c *dagger.Container) *dagger.Directory {
		return c.Directory(plan.ContainerAptDir).Filter(dagger.DirectoryFilterOpts{Include: plan.CrossAptSources})
	}
	own, err := pick(builder).Digest(ctx)
	if err != nil {
		return nil, fmt.Errorf("dagger executor: reading the package sources of the builder %s: %w", p.BuilderImage, err)
	}
	dir := pick(target)
	theirs, err := dir.Digest(ctx)
	if err != nil {
		return nil, fmt.Errorf("dagger executor: reading the package sources of the builder %s for %s: %w", p.BuilderImage, p.Platform, err)
	}
	if own == theirs {
		return nil, nil
	}
	e.sink.Send(progress.Detailf("dagger: the builder %s names other package sources for %s: each architecture keeps to its own", p.BuilderImage, p.Platform))
	return dir, nil
}

// stages chains every stage of p from builder (nothing runs yet: the engine evaluates each
// later, in plan order). The engine uploads a stage's source when it evaluates the stage,
// minutes after the check for nginx's: so it is given a private copy under private, hashed
// as it was made (engine.PrivateSource), never the archive's path in the cache. The copy
// keeps the archive's content and mode, which is what the engine keys the stage by.
func (e *Executor) stages(p *plan.Plan, builder *dagger.Container, sources map[string]string, private string) (map[string]*dagger.Container, map[string]*dagger.Directory, error) {
	ctrs := map[string]*dagger.Container{}
	outs := map[string]*dagger.Directory{}
	for _, s := range p.Stages {
		src, err := engine.PrivateSource(filepath.Join(private, s.Name), sources[s.Source.Component])
		if err != nil {
			return nil, nil, fmt.Errorf("dagger executor: stage %s: %w", s.Name, err)
		}
		ctrs[s.Name] = e.stage(p, builder, s, src, outs)
		outs[s.Name] = ctrs[s.Name].Directory(plan.ContainerOut(s.Name))
	}
	return ctrs, outs, nil
}

// stage is one plan stage: its own chain from the builder, so its cache key is exactly the
// builder, its source (the archive pipeline/source packed from the verified files), its dependencies' outputs, its files, its environment and its script.
// Its OUT is the returned container's plan.ContainerOut(s.Name).
func (e *Executor) stage(p *plan.Plan, builder *dagger.Container, s plan.Stage, src string, outs map[string]*dagger.Directory) *dagger.Container {
	c := builder.
		WithFile(plan.ContainerSrc(s), e.client.Host().File(src)).
		WithDirectory(plan.ContainerWorkDir, e.client.Directory()).
		WithDirectory(plan.ContainerOut(s.Name), e.client.Directory())
	for _, d := range s.Deps {
		c = c.WithDirectory(plan.ContainerDep(d), outs[d])
	}
	for _, f := range s.Files {
		c = c.WithNewFile(path.Join(plan.ContainerWorkDir, f.Path), string(f.Data),
			dagger.ContainerWithNewFileOpts{Permissions: int(f.Mode)})
	}
	for _, v := range p.ContainerEnv(s) {
		c = c.WithEnvVariable(v.Name, v.Value)
	}
	// The run's name is volatile: not part of the step's cache key (see plan.StageRunVar).
	return c.
		WithWorkdir(plan.ContainerWorkDir).
		WithVolatileVariable(plan.StageRunVar, e.runID).
		WithExec(plan.ContainerCommand(s))
}

// cacheKey names a cache volume after the image and platform it belongs to, and the
// directory it is mounted at.
func cacheKey(image, platform, dir string) string {
	sum := sha256.Sum256([]byte(image + "\x00" + platform + "\x00" + dir))
	return "nginx-forge-" + hex.EncodeToString(sum[:8])
}

// PackageVersion returns the version of a Debian package installed in p's builder (after the
// plan's setup command), e.g. libcrypt-dev, whose static library is linked into nginx and
// so belongs in the image's SBOM.
func (e *Executor) PackageVersion(ctx context.Context, p *plan.Plan, pkg string) (string, error) {
	if err := e.Connect(ctx); err != nil {
		return "", err
	}
	p, err := e.buildPlan(ctx, p)
	if err != nil {
		return "", err
	}
	if pkg == plan.LibcryptPackage {
		pkg = p.LibcryptPackageOf() // the target's own in a cross plan
	}
	builder, err := e.builder(ctx, p)
	if err != nil {
		return "", err
	}
	out, err := builder.WithExec(plan.PackageVersionCommand(pkg)).Stdout(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the version of %s in the builder %s: %w%s", pkg, p.BuilderImage, err, stderrTail(err))
	}
	v := strings.TrimSpace(out)
	if err := plan.CheckDebVersion(pkg, v); err != nil {
		return "", err
	}
	return v, nil
}
