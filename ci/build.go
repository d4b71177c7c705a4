package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/dagger"
	"github.com/nginx-forge/nginx-forge/pipeline/host"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// buildFlags are build's flags, kept in a struct so that other commands (and the lead's
// image/push wiring) can reuse the same lock -> sources -> plan -> executor path.
type buildFlags struct {
	engine   string
	output   string
	lockFile string
	mirror   string
	cpu      string
	jobs     int
	platform string
	modules  string
	cache    string
	verbose  bool
}

func init() {
	register(&command{
		name:    "build",
		summary: "Build nginx, OpenSSL, PCRE2 and zlib from the lock into an install tree",
		usage:   "--output DIR [flags]",
		long: `Build the stack pinned by the lock file into an install tree: the files of the image
(usr/sbin/nginx, etc/nginx/..., usr/share/nginx/html/...).

Every source is downloaded (or taken from the cache) and verified against the lock's
SHA-256 and PGP signers before anything is compiled; a malformed lock or a tampered file
stops the build without creating DIR. The build runs in stages (zlib, pcre2, openssl,
nginx), each cached by a hash of everything it depends on, so a second build with nothing
changed takes seconds and an nginx-only change does not rebuild OpenSSL.

Engines:
  dagger   build in containers on a Dagger engine (the builder image of the lock)
  host     build on this machine with its compiler (needs build-essential perl libcrypt-dev)

Examples:
  # Build on this machine into ./out/tree
  go run ./ci build --engine host --output out/tree

  # Build from a mirror holding the lock's files under their upstream names
  go run ./ci build --engine host --mirror http://127.0.0.1:8000 --output out/tree

  # Build for older x86 servers, with 4 jobs
  go run ./ci build --engine host --cpu x86-64-v2 --jobs 4 --output out/tree`,
		flags: func(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
			var f buildFlags
			fs.StringVar(&f.engine, "engine", "dagger", "where to build: dagger or host")
			fs.StringVar(&f.output, "output", "", "write the install tree to `DIR` (must be new or empty)")
			fs.StringVar(&f.lockFile, "lock", lock.DefaultPath, "lock `file` (when the default is absent, the lock built into this program)")
			fs.StringVar(&f.mirror, "mirror", "", "fetch every file as `URL`/<file name> instead of upstream (same checks)")
			fs.StringVar(&f.cpu, "cpu", "", "CPU `level` to compile for: x86-64-v2, x86-64-v3 (amd64 default), x86-64-v4, armv8.2-a (arm64 default), ..., or native (not portable)")
			fs.IntVar(&f.jobs, "jobs", 0, "parallel compile jobs (0: one per CPU)")
			fs.StringVar(&f.platform, "platform", "linux/amd64", "target `platform`: linux/amd64 or linux/arm64")
			fs.StringVar(&f.modules, "modules", "", "comma-separated nginx `modules` replacing the default set (e.g. http_ssl,http_v2,pcre-jit)")
			fs.StringVar(&f.cache, "cache", host.DefaultCacheDir, "host engine: stage cache `DIR`")
			fs.BoolVar(&f.verbose, "v", false, "verbose: show downloads, verification and build log locations")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageErrorf("unexpected arguments: %s", strings.Join(args, " "))
				}
				return runBuild(ctx, f, os.Stderr)
			}
		},
	})
}

func runBuild(ctx context.Context, f buildFlags, stderr io.Writer) error {
	logf := func(format string, a ...any) { fmt.Fprintf(stderr, format+"\n", a...) }
	vlogf := func(string, ...any) {}
	if f.verbose {
		vlogf = logf
	}
	if f.engine != "host" && f.engine != "dagger" {
		return usageErrorf("--engine %q: use dagger or host", f.engine)
	}
	if f.output == "" {
		return usageErrorf("--output DIR is required: where to write the install tree")
	}
	if err := checkEmptyOrAbsent(f.output); err != nil {
		return usageErrorf("--output: %v", err)
	}

	l, err := loadLock(f.lockFile, vlogf)
	if err != nil {
		return err
	}
	p, err := newPlan(l, f)
	if err != nil {
		return usageErrorf("%v", err)
	}
	for _, w := range p.Warnings {
		logf("warning: %s", w)
	}

	srcOpts := []source.Option{source.WithLogf(vlogf)}
	if f.mirror != "" {
		srcOpts = append(srcOpts, source.WithMirror(f.mirror))
	}
	start := time.Now()
	verified, err := source.New(srcOpts...).FetchAll(ctx, l)
	if err != nil {
		return fmt.Errorf("fetching sources (nothing was built): %w", err)
	}
	sources := map[string]string{}
	for name, v := range verified {
		sources[name] = v.Path
	}
	logf("sources: %d verified in %s", len(sources), time.Since(start).Round(time.Millisecond))

	switch f.engine {
	case "host":
		return runHostBuild(ctx, f, p, sources, logf, stderr)
	default:
		return runDaggerBuild(ctx, f, p, sources, logf, vlogf)
	}
}

// loadLock reads the lock file; the default path falls back to the lock built into the
// program, so the command also works outside a checkout.
func loadLock(file string, vlogf func(string, ...any)) (*lock.Lock, error) {
	l, err := lock.Load(file)
	if err == nil {
		return l, nil
	}
	if file == lock.DefaultPath && errors.Is(err, fs.ErrNotExist) {
		vlogf("lock: %s not found, using the lock built into this program", file)
		return lock.Default(), nil
	}
	return nil, fmt.Errorf("loading lock %s (nothing was built): %w", file, err)
}

func newPlan(l *lock.Lock, f buildFlags) (*plan.Plan, error) {
	opts := []plan.Option{plan.WithPlatform(f.platform), plan.WithCPU(f.cpu), plan.WithJobs(f.jobs)}
	if f.modules != "" {
		var mods []string
		for _, m := range strings.Split(f.modules, ",") {
			if m = strings.TrimSpace(m); m != "" {
				mods = append(mods, m)
			}
		}
		opts = append(opts, plan.WithModules(mods...))
	}
	return plan.New(l, opts...)
}

// runHostBuild runs the plan with the host executor and copies the install tree out of the
// cache into --output.
func runHostBuild(ctx context.Context, f buildFlags, p *plan.Plan, sources map[string]string, logf func(string, ...any), stderr io.Writer) error {
	start := time.Now()
	ex := host.New(host.WithCacheDir(f.cache), host.WithJobs(f.jobs), host.WithLogf(logf))
	res, err := ex.Run(ctx, p, sources)
	if err != nil {
		return err
	}
	if err := host.CopyTree(f.output, res.Tree); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stderr, 0, 0, 2, ' ', tabwriter.AlignRight)
	// For a cached stage, the timings are those of the run that built it (what a cold
	// build of it costs on the machine that built it).
	fmt.Fprintln(tw, "stage\tresult\tbuild wall\tuser\tsys\t")
	for _, s := range res.Stages {
		state := "built"
		if s.Cached {
			state = "cached"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Name, state, dur(s.Built.Wall), dur(s.Built.User), dur(s.Built.Sys))
	}
	tw.Flush()
	logf("build: install tree for %s (cpu %s) in %s, took %s", p.Platform, p.CPU, f.output, time.Since(start).Round(time.Second))
	return nil
}

// runDaggerBuild runs the plan in containers on a Dagger engine.
func runDaggerBuild(ctx context.Context, f buildFlags, p *plan.Plan, sources map[string]string, logf, vlogf func(string, ...any)) error {
	opts := []dagger.Option{dagger.WithLogf(logf)}
	if f.verbose {
		opts = append(opts, dagger.WithProgress(os.Stderr))
	}
	ex := dagger.New(opts...)
	defer ex.Close()
	start := time.Now()
	if err := ex.Run(ctx, p, sources, f.output); err != nil {
		return err
	}
	logf("build: install tree for %s (cpu %s) in %s, took %s", p.Platform, p.CPU, f.output, time.Since(start).Round(time.Second))
	return nil
}

func dur(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

func checkEmptyOrAbsent(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("%s is not empty: choose a new directory or empty it", abs)
	}
	return nil
}
