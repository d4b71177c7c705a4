// Package bench measures nginx binaries and configs against each other on loopback: it
// renders one config template for every server under test, serves the same generated
// content, drives each server with wrk, and reports requests/s, p50/p99 latency and the
// server's CPU time per request, each as a median with its spread over alternating rounds,
// and as ratios to a baseline measured in the same run.
//
// Small shared machines are noisy and the load generator competes with the server for the
// same cores, so the server and wrk are pinned to different CPUs (when there are two or
// more), the servers are measured in alternating order round after round, and CPU time per
// request (from /proc, which counts only the server's work) is reported beside requests/s
// (which also depends on how much CPU wrk got).
package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// Target is one server under test: a binary and the knobs its config is rendered with.
type Target struct {
	Name   string
	Binary string
	Knobs  Knobs
	// Profile, when set, is the target's whole config as its users get it (out of the box)
	// instead of the benchmark's template with Knobs.
	Profile *Profile
}

// Options tune a benchmark run. Zero values take the documented defaults.
type Options struct {
	Scenarios []Scenario    // default: all
	Duration  time.Duration // per wrk run; default 10s
	// Warmup is a run per scenario and server before the first round, not recorded (the
	// first requests fill the page cache, open_file_cache and the TLS session state).
	// Default 1s; negative disables it.
	Warmup      time.Duration
	Connections int // 0: each scenario's own default
	Threads     int // wrk threads; 0: one per load-generator CPU
	Rounds      int // default 3
	Wrk         string
	// Dir holds content and server prefixes; default a temporary directory, removed after.
	Dir string
	// NoPin disables CPU pinning even where there are two or more CPUs.
	NoPin bool
	// SyscallRequests is the request count of the syscall pass: after the timed rounds, for
	// every scenario and server, strace -c counts the workers' system calls over this many
	// requests (fewer for the 10 MiB file). 0 means 2000; negative skips the pass.
	SyscallRequests int
	// Strace is the strace binary; default "strace" from PATH.
	Strace string
	// Progress receives each server start, warm-up, round and syscall count as a Detail
	// note; nil discards.
	Progress progress.Sink
}

// step runs f as one progress step, "NAME (MODE)": StepStarted, then StepDone with how long
// it took (Failed on an error). The warm-up, each timed round and the syscall pass run for
// minutes with nothing else to say, and the command's renderer names the step still running
// every 15 s (issue 40).
func (o Options) step(name, mode string, f func() error) error {
	name = fmt.Sprintf("%s (%s)", name, mode)
	o.Progress.Send(progress.StepStarted{Step: name})
	start := time.Now()
	err := f()
	o.Progress.Send(progress.StepDone{Step: name, Duration: time.Since(start), Cache: progress.Built, Failed: err != nil})
	return err
}

func (o *Options) defaults() {
	if len(o.Scenarios) == 0 {
		o.Scenarios = Scenarios
	}
	if o.Duration <= 0 {
		o.Duration = 10 * time.Second
	}
	if o.Warmup == 0 {
		o.Warmup = time.Second
	}
	if o.Rounds <= 0 {
		o.Rounds = 3
	}
	if o.Progress == nil {
		o.Progress = progress.Discard
	}
	if o.SyscallRequests == 0 {
		o.SyscallRequests = 2000
	}
}

// Estimate is about how long Run takes with these options and n targets.
func (o Options) Estimate(n int) time.Duration {
	o.defaults()
	per := o.Duration + 500*time.Millisecond
	total := time.Duration(o.Rounds*n*len(o.Scenarios)) * per
	if o.Warmup > 0 {
		total += time.Duration(n*len(o.Scenarios)) * (max(o.Warmup, time.Second) + 500*time.Millisecond)
	}
	if o.SyscallRequests > 0 {
		// About 1 ms per traced request (a TLS handshake under strace), plus attaching.
		total += time.Duration(n*len(o.Scenarios)) * (time.Second + time.Duration(o.SyscallRequests)*time.Millisecond)
	}
	return total
}

// cpuSplit divides the CPUs this process may use between the servers and the load generator:
// the first half for the servers, the rest for wrk. With fewer than two CPUs nothing is
// pinned and both slices are nil.
func cpuSplit() (server, client []int, err error) {
	cpus, err := allowedCPUs()
	if err != nil {
		return nil, nil, err
	}
	if len(cpus) < 2 {
		return nil, nil, nil
	}
	half := len(cpus) / 2
	return cpus[:half], cpus[half:], nil
}

// allowedCPUs parses Cpus_allowed_list of /proc/self/status ("0-3,6").
func allowedCPUs() ([]int, error) {
	st, err := toolbox.ProcStatus(toolbox.Self)
	if err != nil {
		return nil, fmt.Errorf("reading the CPUs this process may use: %w", err)
	}
	if v, ok := toolbox.StatusField(st, "Cpus_allowed_list"); ok {
		return parseCPUList(v)
	}
	return nil, fmt.Errorf("no Cpus_allowed_list in /proc/self/status")
}

func parseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("parsing CPU list %q: %w", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("parsing CPU list %q: %w", s, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// Run measures every target with every scenario, Rounds times, and compares each target with
// targets[baseline]. The servers run side by side on their own ports; in each round every
// scenario is run on every server, in an order that rotates from round to round so no server
// is always first (A,B then B,A), and slow drift of the machine spreads evenly.
func Run(ctx context.Context, targets []Target, baseline int, opts Options) (*Report, error) {
	opts.defaults()
	if len(targets) == 0 || baseline < 0 || baseline >= len(targets) {
		return nil, fmt.Errorf("bench: need targets and a baseline among them")
	}
	names := map[string]bool{}
	for _, t := range targets {
		if names[t.Name] {
			return nil, fmt.Errorf("bench: two targets named %q", t.Name)
		}
		names[t.Name] = true
	}
	kept, dropped, err := likeForLikeOnly(targets, opts.Scenarios)
	if err != nil {
		return nil, err
	}
	opts.Scenarios = kept
	for _, n := range dropped {
		opts.Progress.Send(progress.Detailf("%s: like for like only, left out of this out-of-box run", n))
	}
	r := &session{ctx: ctx, targets: targets, baseline: baseline, opts: opts, served: map[[2]int]servedAs{}}
	defer r.close()
	if err := r.prepare(); err != nil {
		return nil, err
	}
	r.newReport()
	for i, t := range targets {
		if err := r.start(i, t); err != nil {
			return nil, err
		}
	}
	if err := r.chooseGzipLevels(); err != nil {
		return nil, err
	}
	if err := r.warmUp(); err != nil {
		return nil, err
	}
	runs, err := r.rounds()
	if err != nil {
		return nil, err
	}
	// Peak memory at the end of the timed rounds, before the syscall pass adds its own load.
	for i, s := range r.servers {
		m, err := readServerMemory(s.PID())
		if err != nil {
			return nil, fmt.Errorf("target %s: %w", s.Name, err)
		}
		r.rep.Targets[i].Memory = &m
	}
	syscalls, err := r.syscallPasses()
	if err != nil {
		return nil, err
	}
	r.scenarioReports(runs, syscalls)
	for i, s := range r.servers {
		if log := strings.TrimSpace(s.ErrorLog()); log != "" {
			r.rep.Targets[i].ErrorLog = log
		}
	}
	r.rep.Elapsed = time.Since(r.rep.Started).Round(time.Second)
	return r.rep, nil
}

type servedAs struct {
	encoding string
	size     int
}

// syscallPass counts the workers' system calls over a fixed number of the scenario's
// requests, separately from the timed rounds (tracing slows the server down).
func syscallPass(ctx context.Context, s *server, sc Scenario, opts Options) (SyscallCount, error) {
	pids, err := Workers(s.PID())
	if err != nil {
		return SyscallCount{}, err
	}
	conns := opts.connections(sc)
	n := syscallRequests(sc, opts.SyscallRequests)
	conns = max(1, min(conns, n))
	// Generous: a traced TLS handshake takes about a millisecond; 10 MiB over TLS tens.
	timeout := 60*time.Second + time.Duration(n)*10*time.Millisecond
	load := newFixedLoad(sc, s.Config, n, conns)
	defer load.Close()
	c, err := traceSyscalls(ctx, opts.Strace, pids, timeout, load.Warm, load.Run)
	if err != nil {
		return c, fmt.Errorf("syscall pass, scenario %s: %w", sc.Name, err)
	}
	c.Connections = conns
	if s.Config.Profile != nil {
		truncateLogs(s.Config.Prefix)
	}
	if !s.Alive() {
		return c, fmt.Errorf("syscall pass, scenario %s: %w\n%s", sc.Name, errStopped, s.ErrorLog())
	}
	return c, nil
}

var errNoRequests = errors.New("wrk completed no requests")
