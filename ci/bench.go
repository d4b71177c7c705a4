package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/actions"
	"github.com/nginx-forge/nginx-forge/pipeline/bench"
)

func scenarioHelp() string {
	var b strings.Builder
	for _, s := range bench.Scenarios {
		fmt.Fprintf(&b, "  %-15s %s (%d connections)\n", s.Name, s.Description, s.Connections)
	}
	return b.String()
}

func init() {
	register(&command{
		name:    "bench",
		summary: "benchmark the built nginx against a baseline nginx (default Debian's) with wrk",
		usage:   "(--tree DIR | --nginx BIN) [--baseline BIN] [flags]",
		long: `
Runs two nginx servers side by side on loopback: A, the built one (--tree: an install tree's
usr/sbin/nginx, or --nginx: any binary), and B, the baseline (--baseline, default Debian's
/usr/sbin/nginx). Both get the same generated nginx.conf (self-contained: pid, logs and temp
paths under a temporary prefix, so compiled-in paths do not matter; access log off) with the
performance knobs of the shipped config (--config), the same generated content and an ECDSA
P-256 self-signed certificate, and are driven by wrk over loopback.

Scenarios (--scenarios, comma-separated; default all):
` + scenarioHelp() + `
Noise control: with two or more CPUs the servers are pinned to the first half and wrk to the
second (taskset); worker_processes is the number of server CPUs. Each round runs every
scenario on both servers, A first in odd rounds and B first in even ones. For each scenario
it reports requests/s, p50 and p99 latency, and the server's CPU time per request (user+system
of master and workers from /proc), each as median (min..max) over the rounds, and the ratio
A/B computed per round. CPU per request is the steadier figure on a shared machine: it does
not depend on how much CPU wrk got.

The table goes to standard output, --json writes everything (every run) for CI artifacts,
and in GitHub Actions the Markdown table goes to the step summary. Every wrk run is bounded
(duration + 30 s); servers are stopped with SIGQUIT, then killed.`,
		flags: func(fs *flag.FlagSet) runFunc {
			tree := fs.String("tree", "", "built install `dir`; A is DIR/usr/sbin/nginx")
			nginx := fs.String("nginx", "", "A's nginx `binary` (instead of --tree)")
			baseline := fs.String("baseline", "/usr/sbin/nginx", "B's nginx `binary`")
			config := fs.String("config", "", "nginx.conf whose performance knobs both servers get (default: the shipped one, from --tree or the checkout)")
			o := benchFlags(fs, "all", 10*time.Second)
			jsonOut := fs.String("json", "", "write the full report as JSON to `file`")
			mdOut := fs.String("markdown", "", "write the Markdown table to `file`")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if len(args) > 0 {
					return usageErrorf("bench takes no arguments, got %q", args)
				}
				a, err := builtBinary(*tree, *nginx)
				if err != nil {
					return err
				}
				if *baseline == "" {
					return usageErrorf("--baseline must name an nginx binary")
				}
				opts, err := o.options(stderr)
				if err != nil {
					return err
				}
				k, _, err := shippedKnobs(*tree, *config)
				if err != nil {
					return err
				}
				rep, err := runBounded(ctx, opts, *o.timeout, 2, func(ctx context.Context) (*bench.Report, error) {
					return bench.Run(ctx, []bench.Target{{Name: "built", Binary: a, Knobs: k}, {Name: "baseline", Binary: *baseline, Knobs: k}}, 1, opts)
				})
				if err != nil {
					return err
				}
				return emit(stdout, rep.WriteTable, rep.WriteMarkdown, rep.WriteJSON, *jsonOut, *mdOut)
			}
		},
	})
}

// builtBinary resolves --tree/--nginx to A's binary.
func builtBinary(tree, nginx string) (string, error) {
	switch {
	case tree != "" && nginx != "":
		return "", usageErrorf("give --tree or --nginx, not both")
	case tree != "":
		bin := filepath.Join(tree, "usr", "sbin", "nginx")
		if _, err := os.Stat(bin); err != nil {
			return "", usageErrorf("--tree %s has no usr/sbin/nginx (give the install tree `go run ./ci build --engine host` wrote)", tree)
		}
		return bin, nil
	case nginx != "":
		return nginx, nil
	}
	return "", usageErrorf("give the nginx to measure: --tree DIR (an install tree) or --nginx BIN")
}

// benchOpts are the flags bench and tune share.
type benchOpts struct {
	scenarios        *string
	duration, warmup *time.Duration
	connections, thr *int
	rounds           *int
	noPin, verbose   *bool
	wrk              *string
	timeout          *time.Duration
}

func benchFlags(fs *flag.FlagSet, scenarios string, duration time.Duration) *benchOpts {
	return &benchOpts{
		scenarios:   fs.String("scenarios", scenarios, "comma-separated `list` of scenarios, or all ("+strings.Join(bench.ScenarioNames(), ", ")+")"),
		duration:    fs.Duration("duration", duration, "length of each wrk run (whole seconds)"),
		warmup:      fs.Duration("warmup", time.Second, "unrecorded warm-up run per scenario and server before round 1 (0 for none)"),
		connections: fs.Int("connections", 0, "concurrent connections for every scenario (0: each scenario's default)"),
		thr:         fs.Int("threads", 0, "wrk threads (0: one per load-generator CPU)"),
		rounds:      fs.Int("rounds", 3, "rounds: each runs every scenario on every server, in alternating order"),
		noPin:       fs.Bool("no-pin", false, "do not pin servers and wrk to separate CPUs"),
		wrk:         fs.String("wrk", "wrk", "wrk `binary`"),
		timeout:     fs.Duration("timeout", 0, "give up after this long (0: twice the estimated run time plus 2 minutes)"),
		verbose:     fs.Bool("v", false, "print each run as it completes"),
	}
}

func (o *benchOpts) options(stderr io.Writer) (bench.Options, error) {
	sc, err := bench.SelectScenarios(*o.scenarios)
	if err != nil {
		return bench.Options{}, usageErrorf("--scenarios: %v", err)
	}
	if *o.duration < time.Second || *o.duration%time.Second != 0 {
		return bench.Options{}, usageErrorf("--duration %v: want whole seconds, at least 1s (wrk's unit)", *o.duration)
	}
	if *o.rounds < 1 || *o.connections < 0 || *o.thr < 0 {
		return bench.Options{}, usageErrorf("--rounds must be at least 1; --connections and --threads not negative")
	}
	warm := *o.warmup
	if warm <= 0 {
		warm = -1
	}
	opts := bench.Options{Scenarios: sc, Duration: *o.duration, Warmup: warm, Connections: *o.connections,
		Threads: *o.thr, Rounds: *o.rounds, Wrk: *o.wrk, NoPin: *o.noPin}
	if *o.verbose {
		opts.Logf = func(f string, a ...any) { fmt.Fprintf(stderr, f+"\n", a...) }
	}
	return opts, nil
}

// runBounded runs f under a deadline derived from the run's estimate.
func runBounded[T any](ctx context.Context, opts bench.Options, timeout time.Duration, targets int, f func(context.Context) (T, error)) (T, error) {
	limit := timeout
	if limit <= 0 {
		limit = 2*opts.Estimate(targets) + 2*time.Minute
	}
	if opts.Logf != nil {
		opts.Logf("estimated %v; giving up after %v", opts.Estimate(targets).Round(time.Second), limit.Round(time.Second))
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	v, err := f(ctx)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("gave up after %v (raise --timeout): %w", limit.Round(time.Second), err)
	}
	return v, err
}

// emit prints the table, writes the JSON and Markdown files, and in GitHub Actions adds the
// Markdown to the step summary.
func emit(stdout io.Writer, table, markdown, jsonw func(io.Writer) error, jsonOut, mdOut string) error {
	if err := table(stdout); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := markdown(&md); err != nil {
		return err
	}
	if jsonOut != "" {
		var js bytes.Buffer
		if err := jsonw(&js); err != nil {
			return err
		}
		if err := os.WriteFile(jsonOut, js.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing --json: %w", err)
		}
	}
	if mdOut != "" {
		if err := os.WriteFile(mdOut, md.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing --markdown: %w", err)
		}
	}
	if r := actions.New(actions.WithWriter(stdout)); r.InActions() {
		if err := r.AddSummary(md.String(), ""); err != nil {
			return err
		}
	}
	return nil
}
