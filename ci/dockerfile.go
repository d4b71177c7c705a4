package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
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
		flags: func(fs *flag.FlagSet) func(ctx context.Context, args []string) error {
			lockFile := fs.String("lock", "", "lock file (default: the lock shipped in "+lock.DefaultPath+")")
			cpu := fs.String("cpu", "", "default of the CPU build arg, a -march level (default: the platform's default level)")
			platform := fs.String("platform", "linux/amd64", "platform the stages' flags are rendered for")
			modules := fs.String("modules", "", "comma-separated nginx modules (default: the default module set)")
			mirror := fs.String("mirror", "", "fetch every source from `URL`/<file name> instead of upstream (same checksums), as build --mirror does")
			out := fs.String("o", "", "write to `FILE` instead of standard output")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					return usageErrorf("unexpected arguments: %s", strings.Join(args, " "))
				}
				l := lock.Default()
				if *lockFile != "" {
					var err error
					if l, err = lock.Load(*lockFile); err != nil {
						return fmt.Errorf("loading lock %s: %w", *lockFile, err)
					}
				}
				opts := []plan.Option{plan.WithPlatform(*platform), plan.WithCPU(*cpu)}
				if *modules != "" {
					opts = append(opts, plan.WithModules(strings.Split(*modules, ",")...))
				}
				p, err := plan.New(l, opts...)
				if err != nil {
					return usageErrorf("%v", err)
				}
				for _, w := range p.Warnings {
					fmt.Fprintln(os.Stderr, "warning:", w)
				}
				var ropts []plan.DockerfileOption
				if *mirror != "" {
					ropts = append(ropts, plan.WithSourceMirror(*mirror))
				}
				b, err := plan.RenderDockerfile(p, l, ropts...)
				if errors.Is(err, plan.ErrMirrorURL) {
					return usageErrorf("--mirror: %v", err)
				} else if err != nil {
					return err
				}
				if *out == "" {
					_, err = os.Stdout.Write(b)
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
