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
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
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
	// Logf reports progress; nil is quiet.
	Logf func(format string, args ...any)
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
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
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

// session is one Run: its targets and options, the CPUs and directories it set up, the
// servers it started and the report it fills.
type session struct {
	ctx      context.Context
	targets  []Target
	baseline int
	opts     Options

	serverCPUs, clientCPUs []int
	threads                int
	dir, content           string
	removeDir              bool // dir is Run's own temporary directory
	usr, grp               string

	servers []*server
	served  map[[2]int]servedAs // [scenario, target] -> how an out-of-box server served it
	rep     *Report
}

// close stops every server started, then removes Run's temporary directory.
func (r *session) close() {
	for _, s := range r.servers {
		if s != nil {
			_ = s.Stop()
		}
	}
	if r.removeDir {
		os.RemoveAll(r.dir)
	}
}

// prepare splits the CPUs between the servers and wrk, chooses wrk's threads, and makes the
// directory with the content the servers serve.
func (r *session) prepare() error {
	var err error
	r.serverCPUs, r.clientCPUs, err = cpuSplit()
	if err != nil {
		return err
	}
	if r.opts.NoPin {
		r.serverCPUs, r.clientCPUs = nil, nil
	}
	r.threads = r.opts.Threads
	if r.threads <= 0 {
		r.threads = max(len(r.clientCPUs), 1)
		if r.clientCPUs == nil {
			r.threads = max(runtime.NumCPU()/2, 1)
		}
	}
	r.dir = r.opts.Dir
	if r.dir == "" {
		d, err := os.MkdirTemp("", "nginx-forge-bench-")
		if err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		r.dir, r.removeDir = d, true
	}
	if err := os.Chmod(r.dir, 0o755); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	r.content = filepath.Join(r.dir, "content")
	if err := writeContent(r.content); err != nil {
		return err
	}
	r.usr, r.grp, err = workerUser()
	return err
}

func (r *session) newReport() {
	r.rep = &Report{
		Machine:    describeMachine(),
		Started:    time.Now().UTC(),
		Duration:   r.opts.Duration,
		Rounds:     r.opts.Rounds,
		Threads:    r.threads,
		ServerCPUs: r.serverCPUs,
		ClientCPUs: r.clientCPUs,
		Baseline:   r.targets[r.baseline].Name,
		Mode:       ModeLikeForLike,
	}
	if r.opts.SyscallRequests > 0 {
		r.rep.SyscallRequests = r.opts.SyscallRequests
	}
	for _, t := range r.targets {
		if t.Profile != nil {
			r.rep.Mode = ModeOutOfBox
		}
	}
	r.servers = make([]*server, len(r.targets))
}

// start starts target i on free ports and checks it serves every scenario's content
// (out of the box: records how it serves it).
func (r *session) start(i int, t Target) error {
	info, err := probe(r.ctx, t.Binary)
	if err != nil {
		return fmt.Errorf("target %s: %w", t.Name, err)
	}
	// Free when found; nginx binds them a moment later, and a lost race shows up as
	// nginx's own "address in use".
	ports, err := toolbox.FreePorts(3)
	if err != nil {
		return err
	}
	k := t.Knobs
	if t.Profile != nil {
		k.WorkerProcesses = t.Profile.WorkerProcesses
	}
	if k.WorkerProcesses == "auto" && len(r.serverCPUs) > 0 {
		k.WorkerProcesses = strconv.Itoa(len(r.serverCPUs))
	}
	c := Config{
		Knobs:             k,
		Prefix:            filepath.Join(r.dir, fmt.Sprintf("server%d", i)),
		Content:           r.content,
		HTTPPort:          ports[0],
		HTTPSPort:         ports[1],
		FullHandshakePort: ports[2],
		User:              r.usr,
		Group:             r.grp,
		TempPaths:         info.TempPaths(),
		Encodings:         info.Encodings(),
		Profile:           t.Profile,
	}
	s, err := startServer(r.ctx, t.Name, info.Path, c, r.serverCPUs)
	if err != nil {
		return err
	}
	r.servers[i] = s
	r.rep.Targets = append(r.rep.Targets, TargetInfo{Name: t.Name, Binary: info, Knobs: k, Profile: t.Profile})
	for si, sc := range r.opts.Scenarios {
		if t.Profile != nil {
			// Out of the box, a server serves what its config says (Debian's does not
			// gzip JSON): check the body and record how it was served.
			enc, size, err := checkAsServed(sc, c)
			if err != nil {
				return fmt.Errorf("target %s: %w", t.Name, err)
			}
			r.served[[2]int{si, i}] = servedAs{enc, size}
			continue
		}
		if err := sc.Check(c); err != nil {
			return fmt.Errorf("target %s: %w", t.Name, err)
		}
	}
	r.opts.Logf("started %s: nginx %s (%s) pid %d on 127.0.0.1:%d/%d", t.Name, info.Version, info.OpenSSL, s.PID(), c.HTTPPort, c.HTTPSPort)
	return nil
}

// connections is the scenario's connection count, unless the options override it.
func (o Options) connections(sc Scenario) int {
	if o.Connections > 0 {
		return o.Connections
	}
	return sc.Connections
}

// wrkRun runs wrk for d against target ti with scenario si, and measures the server's CPU
// time and peak worker memory over it. A run with errors, or a server that stopped, fails.
func (r *session) wrkRun(si, ti int, d time.Duration) (RunResult, error) {
	sc, s := r.opts.Scenarios[si], r.servers[ti]
	w := wrkCommand{Wrk: r.opts.Wrk, URL: sc.URL(s.Config), Duration: d, Connections: r.opts.connections(sc),
		Threads: r.threads, Headers: sc.Headers, Timeout: 10 * time.Second, CPUs: r.clientCPUs}
	before, err := treeCPU(s.PID())
	if err != nil {
		return RunResult{}, fmt.Errorf("target %s: %w", s.Name, err)
	}
	res, out, err := w.Run(r.ctx)
	if err != nil {
		return RunResult{}, fmt.Errorf("target %s, scenario %s: %w", s.Name, sc.Name, err)
	}
	after, err := treeCPU(s.PID())
	if err != nil {
		return RunResult{}, fmt.Errorf("target %s: %w", s.Name, err)
	}
	if !s.Alive() {
		return RunResult{}, fmt.Errorf("target %s, scenario %s: %w\n%s", s.Name, sc.Name, errStopped, s.ErrorLog())
	}
	if res.Requests == 0 {
		return RunResult{}, fmt.Errorf("target %s, scenario %s: %w:\n%s\n%s", s.Name, sc.Name, errNoRequests, out, s.ErrorLog())
	}
	if res.Non2xx3xx > 0 || res.Errors()*100 > res.Requests {
		return RunResult{}, fmt.Errorf("target %s, scenario %s: %d non-2xx/3xx responses and %d socket errors in %d requests:\n%s\n%s",
			s.Name, sc.Name, res.Non2xx3xx, res.Errors(), res.Requests, out, s.ErrorLog())
	}
	cpu := after - before
	rr := RunResult{WrkResult: res, ServerCPU: cpu, CPUPerRequest: cpu / time.Duration(res.Requests)}
	if m, err := readServerMemory(s.PID()); err == nil {
		rr.WorkerPeakRSS = m.MaxWorkerPeakRSS
	}
	if s.Config.Profile != nil {
		truncateLogs(s.Config.Prefix)
	}
	return rr, nil
}

// warmUp runs every scenario on every server once, unrecorded.
func (r *session) warmUp() error {
	if r.opts.Warmup <= 0 {
		return nil
	}
	for si, sc := range r.opts.Scenarios {
		for ti := range r.targets {
			r.opts.Logf("warm-up: %s on %s", sc.Name, r.targets[ti].Name)
			if _, err := r.wrkRun(si, ti, r.opts.Warmup); errors.Is(err, errNoRequests) {
				// On a loaded machine a second may not be enough for the first TLS
				// handshakes of many connections; the warm-up is not recorded anyway.
				r.opts.Logf("warm-up: %s on %s completed no requests", sc.Name, r.targets[ti].Name)
			} else if err != nil {
				return fmt.Errorf("warm-up: %w", err)
			}
		}
	}
	return nil
}

// rounds runs the timed rounds, the servers' order rotating from round to round, and
// returns the runs by [scenario, target].
func (r *session) rounds() (map[[2]int][]RunResult, error) {
	runs := map[[2]int][]RunResult{}
	for round := range r.opts.Rounds {
		for si, sc := range r.opts.Scenarios {
			for k := range r.targets {
				ti := (k + round) % len(r.targets)
				rr, err := r.wrkRun(si, ti, r.opts.Duration)
				if err != nil {
					return nil, err
				}
				rr.Round = round + 1
				rr.Order = k + 1
				runs[[2]int{si, ti}] = append(runs[[2]int{si, ti}], rr)
				r.opts.Logf("round %d/%d %s %s: %.0f req/s, p50 %v, p99 %v, %v CPU/req",
					round+1, r.opts.Rounds, sc.Name, r.targets[ti].Name, rr.RequestsSec, rr.P50, rr.P99, rr.CPUPerRequest)
			}
		}
	}
	return runs, nil
}

// syscallPasses counts each server's system calls per scenario (none when the options
// skip the pass), by [scenario, target].
func (r *session) syscallPasses() (map[[2]int]SyscallCount, error) {
	syscalls := map[[2]int]SyscallCount{}
	if r.opts.SyscallRequests <= 0 {
		return syscalls, nil
	}
	for si, sc := range r.opts.Scenarios {
		for ti, s := range r.servers {
			c, err := syscallPass(r.ctx, s, sc, r.opts)
			if err != nil {
				return nil, fmt.Errorf("target %s: %w", s.Name, err)
			}
			c.Target = s.Name
			syscalls[[2]int{si, ti}] = c
			r.opts.Logf("syscalls %s %s: %.1f per request over %d requests (%s)", sc.Name, s.Name, c.PerRequest, c.Requests, c.Top(5))
		}
	}
	return syscalls, nil
}

// scenarioReports summarizes the runs of each scenario per target, with the ratios to the
// baseline, how out-of-box servers served it and the system calls counted.
func (r *session) scenarioReports(runs map[[2]int][]RunResult, syscalls map[[2]int]SyscallCount) {
	targets, baseline := r.targets, r.baseline
	for si, sc := range r.opts.Scenarios {
		sr := ScenarioReport{Name: sc.Name, Description: sc.Description, Connections: r.opts.connections(sc)}
		for ti, t := range targets {
			res := summarize(t.Name, runs[[2]int{si, ti}])
			if sv, ok := r.served[[2]int{si, ti}]; ok {
				res.ContentEncoding, res.BodyBytes = sv.encoding, sv.size
			}
			sr.Results = append(sr.Results, res)
			if c, ok := syscalls[[2]int{si, ti}]; ok {
				sr.Syscalls = append(sr.Syscalls, c)
			}
		}
		for ti, t := range targets {
			if ti != baseline {
				sr.Ratios = append(sr.Ratios, ratio(t.Name, targets[baseline].Name, runs[[2]int{si, ti}], runs[[2]int{si, baseline}]))
			}
		}
		r.rep.Scenarios = append(r.rep.Scenarios, sr)
	}
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
