package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/bench"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// shippedConfig is the image's nginx.conf in the checkout.
const shippedConfig = "pipeline/plan/files/nginx.conf"

func init() {
	register(&command{
		name:    "tune",
		summary: "sweep nginx.conf performance knobs one at a time against the shipped config",
		usage:   "(--tree DIR | --nginx BIN) [--config FILE] [flags]",
		long: `
The tuning method of measuring before changing, automated: reads the knobs of the shipped
nginx.conf (--config; default the install tree's etc/nginx/nginx.conf with --tree, else
` + shippedConfig + `), then changes one knob at a time: worker_processes, worker_connections
with worker_rlimit_nofile, open_file_cache, keepalive_requests, ssl_session_cache,
ssl_session_tickets, sendfile. Every variant runs side by side with the unchanged baseline in
the same rounds (same binary, same content, the benchmark's generated config with only the
knob changed), so each delta is measured against the same baseline run.

A variant is "better" on a scenario when every round was faster than the baseline without
costing more CPU per request (or cost less CPU per request in every round without being
slower), "worse" in the mirror cases, and "noise" otherwise. The best combination takes, for
each knob, the variant that was better somewhere and worse nowhere, and is measured against
the baseline again. If nothing beats the noise it says so: the shipped config stays.

wrk resumes each connection's previous TLS session when the server allows it, so the
tls-resume scenario (a new connection per request) shows what ssl_session_cache and tickets
save; tls-handshake uses a listener with resumption off and ignores them. worker_processes
"auto" means the number of server CPUs.

Scenarios (--scenarios):
` + scenarioHelp(),
		flags: func(fs *flag.FlagSet) runFunc {
			tree := fs.String("tree", "", "built install `dir`; tunes DIR/usr/sbin/nginx")
			nginx := fs.String("nginx", "", "nginx `binary` to tune (instead of --tree)")
			config := fs.String("config", "", "nginx.conf whose knobs are the baseline (default: see above)")
			o := benchFlags(fs, "tls-resume,tls-keepalive,http-keepalive", 5*time.Second, "sweep")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if err := o.checkUsage("tune", args); err != nil {
					return err
				}
				bin, err := builtBinary(*tree, *nginx)
				if err != nil {
					return err
				}
				base, _, err := shippedKnobs(*tree, *config)
				if err != nil {
					return err
				}
				opts, err := o.options(stderr)
				if err != nil {
					return err
				}
				// One baseline plus one server per variant (up to 9), plus the confirmation.
				tr, err := runBounded(ctx, opts, *o.timeout, len(bench.Variants(base, 1))+3, func(ctx context.Context) (*bench.TuneReport, error) {
					return bench.Tune(ctx, bin, base, opts)
				})
				if err != nil {
					return err
				}
				return o.emit(ctx, stdout, tr.WriteTable, tr.WriteMarkdown, tr.WriteJSON)
			}
		},
	})
}

// shippedKnobs reads the knobs of the config named by --config, or by default of the shipped
// nginx.conf: the install tree's etc/nginx/nginx.conf with --tree, else the checkout's.
func shippedKnobs(tree, config string) (bench.Knobs, string, error) {
	conf := config
	if conf == "" {
		conf = findUp(shippedConfig)
		if tree != "" {
			conf = filepath.Join(tree, "etc", "nginx", "nginx.conf")
		}
	}
	f, err := safeio.OpenInput(conf)
	if err != nil {
		return bench.Knobs{}, conf, usageErrorf("--config: %v (give the nginx.conf whose knobs to use)", err)
	}
	defer f.Close()
	k, err := bench.ParseKnobs(f)
	if err != nil {
		return bench.Knobs{}, conf, usageErrorf("reading the knobs of %s: %v (give an nginx.conf: --config)", conf, err)
	}
	if err := k.Validate(); err != nil {
		return bench.Knobs{}, conf, usageErrorf("knobs of %s: %v (give an nginx.conf: --config)", conf, err)
	}
	return k, conf, nil
}

// findUp returns rel under the nearest directory, from the working directory upwards, that
// has it (the checkout's root when run from a subdirectory), or rel itself.
func findUp(rel string) string {
	dir, err := os.Getwd()
	if err != nil {
		return rel
	}
	for {
		p := filepath.Join(dir, rel)
		if _, err := os.Stat(p); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return rel
		}
		dir = parent
	}
}
