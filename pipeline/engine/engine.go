// Package engine is what the build pipeline (pipeline/forge) needs from a place that runs a
// plan: build the install tree, report a builder package's version, and run the smoke suite
// against an image. Two engines implement it, each in its own package below this one:
// daggerexec (containers on a Dagger engine, production) and host (this machine's compiler,
// bare metal and the tests). The checks both engines make on their input live here, once.
package engine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/prepared"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// Engine runs plans. The build pipeline chooses one per build and calls it in this order:
// Preflight, Builder, then per platform Build and PackageVersion, then Smoke for each
// image it may publish; Close at the end.
type Engine interface {
	// Name is the engine's name as `ci build --engine` takes it.
	Name() string
	// Preflight fails in seconds, before anything is fetched, when the engine cannot run
	// here (no Dagger engine; no runc, umoci or root for the smoke tests when smoke is set).
	Preflight(ctx context.Context, smoke bool) error
	// Builder is what p is compiled with: its glibc, which the runtime image must match or
	// exceed, and the builder image as the engine resolved it.
	Builder(ctx context.Context, p *plan.Plan) (Builder, error)
	// Build builds p from sources (component name -> path of its verified tarball) and
	// writes the install tree into dir, which must be absent or empty. Each stage is
	// reported to steps as it starts and ends (progress.StepStarted, progress.StepDone), one
	// at a time, named as in the plan. The stages are also returned in plan order when the
	// engine can tell how each went (nil otherwise).
	Build(ctx context.Context, p *plan.Plan, sources map[string]string, dir string, steps progress.Sink) ([]Stage, error)
	// PackageVersion is the version of a package installed in p's builder (libcrypt-dev,
	// whose static library is linked into nginx, belongs in the SBOM).
	PackageVersion(ctx context.Context, p *plan.Plan, pkg string) (string, error)
	// Smoke starts img the way it is meant to run and runs pipeline/smoke's suite against
	// it. The error is for failures to get that far; failed checks are in the report.
	Smoke(ctx context.Context, p *plan.Plan, img v1.Image, o smoke.Options) (smoke.Report, error)
	// Close ends the engine's session.
	Close() error
}

// The engines' names (Engine.Name, as `ci build --engine` takes them).
const (
	// Host builds on this machine, for its architecture or cross-compiled: one platform a build.
	Host = "host"
	// Dagger builds in containers on a Dagger engine, one platform after another.
	Dagger = "dagger"
)

// Stage is how one plan stage went.
type Stage struct {
	Name   string
	Cached bool // reused from the engine's cache
	// Wall, User and Sys are the times of the run that built the stage: for a cached stage,
	// what a cold build of it cost on the machine that built it.
	Wall, User, Sys time.Duration
}

// Checked wraps e so that every Build's input is checked once, here, before the engine sees
// it (CheckInput): engines build what they are given and need not repeat the checks.
func Checked(e Engine) Engine {
	if _, ok := e.(checked); ok {
		return e
	}
	return checked{e}
}

type checked struct{ Engine }

// Builder is what a plan is compiled with (Engine.Builder).
type Builder struct {
	// Glibc is the glibc version ("2.39") the binary is linked against.
	Glibc string
	// Image is the builder image by the digest the engine pulled (REF@sha256:...), for the
	// provenance; "" for an engine that compiles with the machine's own toolchain.
	Image string
}

func (c checked) Build(ctx context.Context, p *plan.Plan, sources map[string]string, dir string, steps progress.Sink) ([]Stage, error) {
	abs, err := CheckInput(p, sources, dir)
	if err != nil {
		return nil, fmt.Errorf("%s engine: %w", c.Name(), err)
	}
	if steps == nil {
		steps = progress.Discard
	}
	return c.Engine.Build(ctx, p, sources, abs, steps)
}

// CheckInput is what a build's input must satisfy before any engine runs a stage: the plan's
// stages in dependency order with its final stage among them, every source tarball with the
// SHA-256 the plan pins, and an absent or empty install tree directory (returned absolute).
// Nothing is created when it fails.
func CheckInput(p *plan.Plan, sources map[string]string, dir string) (string, error) {
	if err := CheckSources(p, sources); err != nil {
		return "", err
	}
	abs, err := EmptyDir(dir)
	if err != nil {
		return "", fmt.Errorf("install tree directory: %w", err)
	}
	return abs, nil
}

// CheckSources is CheckInput for an engine that keeps its install tree itself (the host
// executor's Run, which returns the tree in its cache): the plan's order and the sources.
func CheckSources(p *plan.Plan, sources map[string]string) error {
	if err := p.CheckOrder(); err != nil {
		return err
	}
	return VerifySources(p, sources)
}

// VerifySources checks every stage's source before an engine uses it: each must be an
// archive pipeline/source prepared (the files of the verified source as pipeline/unpack
// wrote them, named after the archive's own SHA-256) and still hash to that name, since a
// file in a shared cache can change between the fetch and the build. No engine gives a
// stage a downloaded archive.
func VerifySources(p *plan.Plan, sources map[string]string) error {
	for _, s := range p.Stages {
		path, ok := sources[s.Source.Component]
		if !ok || path == "" {
			return fmt.Errorf("no source tarball given for %s (stage %s): fetch it first", s.Source.Component, s.Name)
		}
		if err := prepared.Check(path); err != nil {
			return fmt.Errorf("%s %s (stage %s): %w", s.Source.Component, s.Source.Version, s.Name, err)
		}
	}
	return nil
}

// EmptyDir returns dir as an absolute path after checking that it is absent or empty: an
// install tree must be exactly what the build made, and a build must never merge into (or
// wipe) a directory that holds anything else.
func EmptyDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("directory %q: %w", dir, err)
	}
	entries, err := os.ReadDir(abs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("directory %s: %w", abs, err)
	}
	if len(entries) > 0 {
		return "", fmt.Errorf("%s is not empty: choose a new directory or empty it", abs)
	}
	return abs, nil
}

// GlibcFromGetconf reads the version out of plan.GlibcVersionCommand's output ("glibc 2.39").
func GlibcFromGetconf(out string) (string, error) {
	v, ok := strings.CutPrefix(strings.TrimSpace(out), "glibc ")
	if !ok || v == "" {
		return "", fmt.Errorf("unexpected output of %s: %q (not a glibc system?)", strings.Join(plan.GlibcVersionCommand(), " "), out)
	}
	return strings.TrimSpace(v), nil
}
