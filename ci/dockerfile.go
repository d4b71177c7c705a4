package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/dockerfile"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

func init() {
	register(&command{
		name:    "dockerfile",
		summary: "render the build plan as a multi-stage Dockerfile",
		usage:   "[flags]",
		long: `Renders the same plan "ci build" runs as a multi-stage Dockerfile, for people without
Dagger: docker build -f dockerfiles/Dockerfile . (build args BUILDER_IMAGE, RUNTIME_IMAGE, CPU).
The committed dockerfiles/Dockerfile is the rendering of the default lock and options, and a
test fails when it drifts; regenerate it with:

  go run ./ci dockerfile -o dockerfiles/Dockerfile`,
		flags: func(fs *flag.FlagSet) runFunc {
			lockFile := fs.String("lock", "", "lock file (default: the lock shipped in "+lock.DefaultPath+")")
			cpu := fs.String("cpu", "", "default of the CPU build arg, a -march level (default: the platform's default level)")
			platform := platformFlag(plan.DefaultPlatform)
			fs.Var(&platform, "platform", "`platform` the stages' flags are rendered for: "+plan.SupportedList())
			optimize := fs.String("optimize", "", "optimization mode rendered into the stages: auto, none, lto or pgo (default: auto, as for build)")
			modules := fs.String("modules", "", "nginx modules: +name,-name change the default set, a plain list replaces it (default: the default set; 'ci modules' lists them)")
			mirror := fs.String("mirror", "", "fetch every source from `URL`/<file name> instead of upstream (same checksums), as build --mirror does")
			out := fs.String("o", "", "write to `FILE` instead of standard output")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if err := noArgs("dockerfile", args); err != nil {
					return err
				}
				l := lock.Default()
				if *lockFile != "" {
					var err error
					if l, err = lock.Load(*lockFile); err != nil {
						return usageErrorf("loading lock %s: %v", *lockFile, err)
					}
				}
				r := dockerfile.Request{Platform: plan.Platform(platform), CPU: *cpu, Mirror: *mirror, Optimize: *optimize}
				if *lockFile != "" {
					// Run from the repository root (the build context): a profile the lock
					// keeps in the repository is copied from beside it.
					r.LockDir = filepath.Dir(*lockFile)
				}
				if *modules != "" {
					r.Modules = strings.Split(*modules, ",")
				}
				b, warnings, err := dockerfile.RenderLock(l, r)
				switch {
				case errors.Is(err, dockerfile.ErrPlan):
					return usageErrorf("%v", err)
				case errors.Is(err, dockerfile.ErrMirrorURL):
					return usageErrorf("--mirror: %v", err)
				case err != nil:
					return err
				}
				sink, _ := newLog(stderr, false, false)
				for _, w := range warnings {
					sink.Send(progress.Note{Level: progress.Warning, Text: w})
				}
				if *out == "" {
					_, err = stdout.Write(b)
					return err
				}
				if err := notInterrupted(ctx, "-o "+*out); err != nil {
					return err
				}
				if err := os.WriteFile(*out, b, 0o644); err != nil {
					return fmt.Errorf("writing %s: %w", *out, err)
				}
				return nil
			}
		},
	})
}
