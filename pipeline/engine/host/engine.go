package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// Engine is the host executor as a pipeline engine: it builds with this machine's compiler
// (stages cached in the executor's cache directory) and smoke-tests images in runc.
type Engine struct {
	ex *Executor
}

// NewEngine returns the host engine; opts configure its executor.
func NewEngine(opts ...Option) *Engine { return &Engine{ex: New(opts...)} }

var _ engine.Engine = (*Engine)(nil)

// Name is "host".
func (e *Engine) Name() string { return engine.Host }

// Preflight: the cache must be this user's alone (checkCacheDir), before anything is
// fetched; the smoke tests run the image in runc, which needs runc, umoci and root; say so
// before an hour of compiling.
func (e *Engine) Preflight(ctx context.Context, smoke bool) error {
	if err := e.ex.checkCacheDir(); err != nil {
		return err
	}
	if !smoke {
		return nil
	}
	for _, tool := range []string{"runc", "umoci"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("the smoke tests need %s (apt-get install runc umoci, or .ci/install-deps); or pass --no-smoke with --output/--tree", tool)
		}
	}
	if os.Geteuid() != 0 {
		return errors.New("the smoke tests run the image in runc, which needs root: run as root (sudo), or pass --no-smoke with --output/--tree")
	}
	return nil
}

// Builder is this machine: its glibc, which the binary links against, and no image (the
// compilers are the machine's own).
func (e *Engine) Builder(ctx context.Context, p *plan.Plan) (engine.Builder, error) {
	// A cross build (plan.Cross) needs the cross toolchain and qemu: say so now, before
	// anything is fetched, naming the packages.
	bp, err := p.ForBuild(runtime.GOARCH)
	if err != nil {
		return engine.Builder{}, err
	}
	if bp.Cross != nil {
		if err := CheckTools(bp); err != nil {
			return engine.Builder{}, err
		}
		if err := checkEmulation(bp); err != nil {
			return engine.Builder{}, err
		}
	}
	argv := plan.GlibcVersionCommand()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return engine.Builder{}, fmt.Errorf("reading this machine's glibc version (%s): %w", strings.Join(argv, " "), err)
	}
	v, err := engine.GlibcFromGetconf(string(out))
	return engine.Builder{Glibc: v}, err
}

// Build runs the plan with the executor and copies the install tree out of its cache into
// dir. Its input is checked by engine.Checked, which the build pipeline wraps every engine in.
func (e *Engine) Build(ctx context.Context, p *plan.Plan, sources map[string]string, dir string, steps progress.Sink) ([]engine.Stage, error) {
	res, err := e.ex.run(ctx, p, sources, steps)
	if err != nil {
		return nil, err
	}
	var stages []engine.Stage
	for _, s := range res.Stages {
		stages = append(stages, engine.Stage{Name: s.Name, Cached: s.Cached, Wall: s.Built.Wall, User: s.Built.User, Sys: s.Built.Sys})
	}
	if err := copyTree(dir, res.Tree); err != nil {
		return stages, err
	}
	return stages, nil
}

// PackageVersion is the version of an installed package on this machine (dpkg-query).
func (e *Engine) PackageVersion(ctx context.Context, p *plan.Plan, pkg string) (string, error) {
	if pkg == plan.LibcryptPackage {
		// A cross build links the target architecture's libcrypt.a (plan.Cross).
		if bp, err := p.ForBuild(runtime.GOARCH); err == nil {
			pkg = bp.LibcryptPackageOf()
		}
	}
	argv := plan.PackageVersionCommand(pkg)
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	if err != nil {
		return "", fmt.Errorf("reading the version of %s on this machine (dpkg-query): %w", pkg, err)
	}
	v := strings.TrimSpace(string(out))
	if err := plan.CheckDebVersion(pkg, v); err != nil {
		return "", err
	}
	return v, nil
}

// Smoke runs img in runc here (see SmokeImage), with the engine's conf.d and TLS choices
// (WithSmokeConfD, WithSmokeNoTLS).
func (e *Engine) Smoke(ctx context.Context, p *plan.Plan, img v1.Image, o smoke.Options) (smoke.Report, error) {
	return smokeImage(ctx, img, o, e.ex.options)
}

// Close does nothing: the host engine holds no session.
func (e *Engine) Close() error { return nil }
