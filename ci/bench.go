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
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
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
		long:    benchHelp,
		flags: func(fs *flag.FlagSet) runFunc {
			tree := fs.String("tree", "", "built install `dir`; A is DIR/usr/sbin/nginx")
			variant := fs.String("variant-tree", "", "a second built install `dir` (e.g. the AWS-LC + zlib-ng build) measured in the same like-for-like run as \"variant\"")
			nginx := fs.String("nginx", "", "A's nginx `binary` (instead of --tree)")
			baseline := fs.String("baseline", "/usr/sbin/nginx", "B's nginx `binary`")
			config := fs.String("config", "", "nginx.conf whose performance knobs both servers get (default: the shipped one, from --tree or the checkout)")
			mode := fs.String("mode", "both", "like-for-like, out-of-box, or both")
			oobConfig := fs.String("oob-config", "", "A's own nginx.conf out of the box (default: the shipped one, from --tree or the checkout)")
			oobBaseline := fs.String("oob-baseline-config", "", "B's own nginx.conf out of the box (default: Debian 12's default nginx.conf, embedded)")
			o := benchFlags(fs, "all", 10*time.Second, "report")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if err := o.checkUsage("bench", args); err != nil {
					return err
				}
				return runBench(ctx, benchArgs{tree: *tree, variant: *variant, nginx: *nginx, baseline: *baseline, config: *config, mode: *mode,
					oobConfig: *oobConfig, oobBaseline: *oobBaseline, o: o}, stdout, stderr)
			}
		},
	})
}

// outOfBoxTargets are A with its own config (--oob-config, default the shipped one) and B with
// Debian's default config (or --oob-baseline-config). Includes are read from the install
// tree's etc/nginx with --tree, else from the config file's directory.
func outOfBoxTargets(tree, aConf, bConf, a, b string) ([]bench.Target, error) {
	if aConf == "" {
		aConf = findUp(shippedConfig)
		if tree != "" {
			aConf = filepath.Join(tree, "etc", "nginx", "nginx.conf")
		}
	}
	confDir := func(conf string) string {
		if tree != "" {
			return filepath.Join(tree, "etc", "nginx")
		}
		return filepath.Dir(conf)
	}
	pa, err := bench.ReadProfile("shipped nginx.conf", aConf, confDir(aConf))
	if err != nil {
		return nil, usageErrorf("--oob-config: %v", err)
	}
	ka, err := profileKnobs(aConf)
	if err != nil {
		return nil, err
	}
	var pb *bench.Profile
	kb := bench.DefaultKnobs()
	if bConf == "" {
		if pb, err = bench.DebianDefaultProfile(); err != nil {
			return nil, err
		}
	} else {
		if pb, err = bench.ReadProfile("baseline's nginx.conf", bConf, filepath.Dir(bConf)); err != nil {
			return nil, usageErrorf("--oob-baseline-config: %v", err)
		}
		if kb, err = profileKnobs(bConf); err != nil {
			return nil, err
		}
	}
	return []bench.Target{{Name: "built", Binary: a, Knobs: ka, Profile: pa}, {Name: "baseline", Binary: b, Knobs: kb, Profile: pb}}, nil
}

// profileKnobs reads a config's knobs for the report (the profile is what the server runs).
func profileKnobs(conf string) (bench.Knobs, error) {
	f, err := safeio.OpenInput(conf)
	if err != nil {
		return bench.Knobs{}, usageErrorf("%v", err)
	}
	defer f.Close()
	k, err := bench.ParseKnobs(f)
	if err != nil {
		return bench.Knobs{}, usageErrorf("reading the knobs of %s: %v (give an nginx.conf)", conf, err)
	}
	return k, nil
}

// builtBinary resolves --tree/--nginx to A's binary.
func builtBinary(tree, nginx string) (string, error) {
	switch {
	case tree != "" && nginx != "":
		return "", usageErrorf("give --tree or --nginx, not both")
	case tree != "":
		return treeBinary("--tree", tree)
	case nginx != "":
		return nginx, checkExecutable("--nginx", nginx)
	}
	return "", usageErrorf("give the nginx to measure: --tree DIR (an install tree) or --nginx BIN")
}

// treeBinary is the nginx of an install tree given with flag (--tree, --variant-tree): the
// messages name the flag that gave it.
func treeBinary(flag, tree string) (string, error) {
	bin := filepath.Join(tree, "usr", "sbin", "nginx")
	if _, err := os.Stat(bin); err != nil {
		return "", usageErrorf("%s %s has no usr/sbin/nginx (give the install tree `go run ./ci build --engine host` wrote)", flag, tree)
	}
	return bin, checkExecutable(flag, bin)
}

// checkBaseline: --baseline names an executable file.
func checkBaseline(bin string) error {
	if bin == "" {
		return usageErrorf("--baseline must name an nginx binary")
	}
	return checkExecutable("--baseline", bin)
}

// benchOpts are the flags bench and tune share.
type benchOpts struct {
	scenarios        *string
	duration, warmup *time.Duration
	connections, thr *int
	rounds           *int
	noPin, verbose   *bool
	quiet            *bool
	wrk              *string
	timeout          *time.Duration
	syscallRequests  *int
	strace           *string
	jsonOut, mdOut   *string // --json, --markdown
}

// benchFlags declares the flags bench and tune share: scenarios and duration are the
// defaults of --scenarios and --duration, report names what --json and --markdown write.
func benchFlags(fs *flag.FlagSet, scenarios string, duration time.Duration, report string) *benchOpts {
	return &benchOpts{
		jsonOut:         fs.String("json", "", "write the full "+report+" as JSON to `file`"),
		mdOut:           fs.String("markdown", "", "write the "+report+" as Markdown to `file`"),
		scenarios:       fs.String("scenarios", scenarios, "comma-separated `list` of scenarios, or all ("+strings.Join(bench.ScenarioNames(), ", ")+")"),
		duration:        fs.Duration("duration", duration, "length of each wrk run (whole seconds)"),
		warmup:          fs.Duration("warmup", time.Second, "unrecorded warm-up run per scenario and server before round 1 (0 for none)"),
		connections:     fs.Int("connections", 0, "concurrent connections for every scenario (0: each scenario's default)"),
		thr:             fs.Int("threads", 0, "wrk threads (0: one per load-generator CPU)"),
		rounds:          fs.Int("rounds", 3, "rounds: each runs every scenario on every server, in alternating order"),
		noPin:           fs.Bool("no-pin", false, "do not pin servers and wrk to separate CPUs"),
		wrk:             fs.String("wrk", "wrk", "wrk `binary`"),
		timeout:         fs.Duration("timeout", 0, "give up after this long (0: twice the estimated run time plus 2 minutes)"),
		verbose:         fs.Bool("v", false, "print each run as it completes"),
		quiet:           fs.Bool("q", false, "quiet: no \"still running\" line every 15 s while a warm-up, a round or the syscall pass runs"),
		syscallRequests: fs.Int("syscall-requests", 2000, "requests per scenario and server in the syscall pass after the timed rounds (strace -c of the workers; 0 skips it)"),
		strace:          fs.String("strace", "strace", "strace `binary` for the syscall pass"),
	}
}

// checkUsage refuses arguments to cmd (bench, tune) and a negative --timeout before anything
// is built or started (0 is the estimate-based default).
func (o *benchOpts) checkUsage(cmd string, args []string) error {
	if err := noArgs(cmd, args); err != nil {
		return err
	}
	if *o.timeout < 0 {
		return usageErrorf("--timeout %s must not be negative (0: twice the estimated run time plus 2 minutes)", *o.timeout)
	}
	return nil
}

func (o *benchOpts) options(stderr io.Writer) (bench.Options, error) {
	sink, _ := newLog(stderr, *o.verbose, false)
	sink.quiet = *o.quiet
	sc, err := bench.SelectScenarios(*o.scenarios)
	if err != nil {
		return bench.Options{}, usageErrorf("--scenarios: %v", err)
	}
	if *o.duration < time.Second || *o.duration%time.Second != 0 {
		return bench.Options{}, usageErrorf("--duration %v: want whole seconds, at least 1s (wrk's unit)", *o.duration)
	}
	if *o.rounds < 1 || *o.connections < 0 || *o.thr < 0 || *o.syscallRequests < 0 {
		return bench.Options{}, usageErrorf("--rounds must be at least 1; --connections, --threads and --syscall-requests not negative")
	}
	sysReq := *o.syscallRequests
	if sysReq == 0 {
		sysReq = -1 // bench.Options: negative skips the pass
	}
	warm := *o.warmup
	if warm <= 0 {
		warm = -1
	}
	opts := bench.Options{Scenarios: sc, Duration: *o.duration, Warmup: warm, Connections: *o.connections,
		Threads: *o.thr, Rounds: *o.rounds, Wrk: *o.wrk, NoPin: *o.noPin, SyscallRequests: sysReq, Strace: *o.strace, Progress: sink}
	return opts, nil
}

// runBounded runs f under a deadline derived from the run's estimate.
func runBounded[T any](ctx context.Context, opts bench.Options, timeout time.Duration, targets int, f func(context.Context) (T, error)) (T, error) {
	limit := timeout
	if limit <= 0 {
		limit = 2*opts.Estimate(targets) + 2*time.Minute
	}
	if opts.Progress != nil {
		opts.Progress.Send(progress.Detailf("estimated %v; giving up after %v", opts.Estimate(targets).Round(time.Second), limit.Round(time.Second)))
	}
	// The run's warm-ups, rounds and syscall passes are steps (pipeline/bench): the renderer
	// names the one still running every 15 s, unless -q (lineSink.quiet).
	if s, ok := opts.Progress.(*lineSink); ok {
		defer s.heartbeat()()
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
func (o *benchOpts) emit(ctx context.Context, stdout io.Writer, table, markdown, jsonw func(io.Writer) error) error {
	jsonOut, mdOut := *o.jsonOut, *o.mdOut
	if err := table(stdout); err != nil {
		return err
	}
	if err := notInterrupted(ctx, "--json and --markdown"); err != nil {
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
		if err := r.AddSummary(ctx, md.String(), ""); err != nil {
			return err
		}
	}
	return nil
}

// benchArgs are bench's flags.
type benchArgs struct {
	tree, nginx, baseline, config, mode string
	variant                             string // --variant-tree
	oobConfig, oobBaseline              string
	o                                   *benchOpts
}

func runBench(ctx context.Context, a benchArgs, stdout, stderr io.Writer) error {
	bin, err := builtBinary(a.tree, a.nginx)
	if err != nil {
		return err
	}
	if err := checkBaseline(a.baseline); err != nil {
		return err
	}
	opts, err := a.o.options(stderr)
	if err != nil {
		return err
	}
	lfl, oob, err := benchModes(a.mode, opts.Scenarios, *a.o.scenarios)
	if err != nil {
		return err
	}
	k, _, err := shippedKnobs(a.tree, a.config)
	if err != nil {
		return err
	}
	var oobTargets []bench.Target
	if oob {
		if oobTargets, err = outOfBoxTargets(a.tree, a.oobConfig, a.oobBaseline, bin, a.baseline); err != nil {
			return err
		}
	}
	lflTargets := []bench.Target{{Name: "built", Binary: bin, Knobs: k}}
	if a.variant != "" {
		vbin, err := treeBinary("--variant-tree", a.variant)
		if err != nil {
			return err
		}
		if !lfl {
			return usageErrorf("--variant-tree is measured like for like: use --mode like-for-like or both")
		}
		// Its own tree's knobs: the AWS-LC build's nginx.conf turns session tickets on, without
		// which AWS-LC resumes no TLS 1.3 session (pipeline/plan/libraries.go).
		vk, _, err := shippedKnobs(a.variant, a.config)
		if err != nil {
			return err
		}
		lflTargets = append(lflTargets, bench.Target{Name: "variant", Binary: vbin, Knobs: vk})
	}
	lflTargets = append(lflTargets, bench.Target{Name: "baseline", Binary: a.baseline, Knobs: k})
	n := 0
	if lfl {
		n += len(lflTargets)
	}
	if oob {
		n += 2
	}
	rep, err := runBounded(ctx, opts, *a.o.timeout, n, func(ctx context.Context) (*bench.Report, error) {
		var rep, out *bench.Report
		var err error
		if lfl {
			if rep, err = bench.Run(ctx, lflTargets, len(lflTargets)-1, opts); err != nil {
				return nil, err
			}
		}
		if oob {
			if out, err = bench.Run(ctx, oobTargets, 1, opts); err != nil {
				if rep != nil {
					// Keep the like-for-like figures: print them, then fail.
					_ = rep.WriteTable(stdout)
				}
				return nil, fmt.Errorf("out of the box: %w", err)
			}
		}
		if rep == nil {
			return out, nil
		}
		rep.OutOfBox = out
		return rep, nil
	})
	if err != nil {
		return err
	}
	return a.o.emit(ctx, stdout, rep.WriteTable, rep.WriteMarkdown, rep.WriteJSON)
}

// benchModes reads --mode: whether to run like for like, out of the box, or both. Out of
// the box is left out when no selected scenario can run there (gzip-equal-bytes needs the
// benchmark's own config): a usage error for --mode out-of-box, before anything starts.
func benchModes(mode string, scenarios []bench.Scenario, list string) (lfl, oob bool, err error) {
	lfl, oob = mode == "both" || mode == bench.ModeLikeForLike, mode == "both" || mode == bench.ModeOutOfBox
	if !lfl && !oob {
		return false, false, usageErrorf("--mode %q: want like-for-like, out-of-box or both", mode)
	}
	if oob && len(bench.OutOfBoxScenarios(scenarios)) == 0 {
		if !lfl {
			return false, false, usageErrorf("--scenarios %s: measured like for like only (each server at its own gzip level of the benchmark's config); use --mode like-for-like or both", list)
		}
		oob = false
	}
	return lfl, oob, nil
}

var benchHelp = `
Runs two nginx servers side by side on loopback: A, the built one (--tree: an install tree's
usr/sbin/nginx, or --nginx: any binary), and B, the baseline (--baseline, default Debian's
/usr/sbin/nginx); --variant-tree adds a third, another build (the AWS-LC + zlib-ng variant),
to the like-for-like run, each compared with B in the same rounds. Both get the same generated nginx.conf (self-contained: pid, logs and temp
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

Out of the box (--mode both, the default, or out-of-box): a second run where each server gets
its own whole config as its users get it: A the image's shipped nginx.conf (--oob-config;
default the install tree's etc/nginx/nginx.conf with its includes, else the checkout's), B
Debian 12's default /etc/nginx/nginx.conf (embedded; --oob-baseline-config to give another).
Their main, events and http directives are kept as written (access log included: a file goes
under the server's prefix, /dev/stdout to a pipe the bench drains); pid, user, error_log,
includes of other directories, temp paths and server blocks are the benchmark's. Each
response is checked as served: Debian's default config does not gzip JSON, and the report
says so beside the figures.

System calls: after the timed rounds, a separate pass counts the workers' system calls with
strace -c -f over --syscall-requests requests per scenario and server (0 skips it; strace
must be installed and allowed to trace the workers). Memory: the peak resident set (VmHWM)
of every worker at the end of the timed rounds.

The table goes to standard output, --json writes everything (every run) for CI artifacts,
and in GitHub Actions the Markdown table goes to the step summary. Every wrk run is bounded
(duration + 30 s); servers are stopped with SIGQUIT, then killed.`
