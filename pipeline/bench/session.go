package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

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
	// gzipLevels is each server's level for the EqualBytes scenarios (chooseGzipLevels).
	gzipLevels []GzipLevelChoice
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
		if sc.EqualBytes {
			continue // checked once its level is chosen (chooseGzipLevels)
		}
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
		if sc.asksForCompression() {
			// Compressed bytes per response: CPU per request of two compressors compares
			// like with like only at equal or fewer bytes on the wire.
			enc, size, err := checkAsServed(sc, c)
			if err != nil {
				return fmt.Errorf("target %s: %w", t.Name, err)
			}
			r.served[[2]int{si, i}] = servedAs{enc, size}
		}
	}
	r.opts.Progress.Send(progress.Detailf("started %s: nginx %s (%s) pid %d on 127.0.0.1:%d/%d", t.Name, info.Version, info.OpenSSL, s.PID(), c.HTTPPort, c.HTTPSPort))
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
	cpu := after.Sub(before)
	rr := RunResult{WrkResult: res, ServerCPU: cpu.Total(), ServerSystemCPU: cpu.System, CPUPerRequest: cpu.Total() / time.Duration(res.Requests)}
	if m, err := readServerMemory(s.PID()); err == nil {
		rr.WorkerPeakRSS = m.MaxWorkerPeakRSS
	}
	if s.Config.Profile != nil {
		truncateLogs(s.Config.Prefix)
	}
	return rr, nil
}

// warmUp runs every scenario on every server once, unrecorded, as one progress step.
func (r *session) warmUp() error {
	if r.opts.Warmup <= 0 {
		return nil
	}
	return r.opts.step("warm-up", r.rep.Mode, r.warmUpRuns)
}

func (r *session) warmUpRuns() error {
	for si, sc := range r.opts.Scenarios {
		for ti := range r.targets {
			r.opts.Progress.Send(progress.Detailf("warm-up: %s on %s", sc.Name, r.targets[ti].Name))
			if _, err := r.wrkRun(si, ti, r.opts.Warmup); errors.Is(err, errNoRequests) {
				// On a loaded machine a second may not be enough for the first TLS
				// handshakes of many connections; the warm-up is not recorded anyway.
				r.opts.Progress.Send(progress.Detailf("warm-up: %s on %s completed no requests", sc.Name, r.targets[ti].Name))
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
		name := fmt.Sprintf("round %d/%d", round+1, r.opts.Rounds)
		if err := r.opts.step(name, r.rep.Mode, func() error { return r.round(round, runs) }); err != nil {
			return nil, err
		}
	}
	return runs, nil
}

// round runs every scenario on every server once, in round's order, into runs (one
// progress step).
func (r *session) round(round int, runs map[[2]int][]RunResult) error {
	for si, sc := range r.opts.Scenarios {
		for k := range r.targets {
			ti := (k + round) % len(r.targets)
			rr, err := r.wrkRun(si, ti, r.opts.Duration)
			if err != nil {
				return err
			}
			rr.Round = round + 1
			rr.Order = k + 1
			runs[[2]int{si, ti}] = append(runs[[2]int{si, ti}], rr)
			r.opts.Progress.Send(progress.Detailf("round %d/%d %s %s: %.0f req/s, p50 %v, p99 %v, %v CPU/req",
				round+1, r.opts.Rounds, sc.Name, r.targets[ti].Name, rr.RequestsSec, rr.P50, rr.P99, rr.CPUPerRequest))
		}
	}
	return nil
}

// syscallPasses counts each server's system calls per scenario (none when the options
// skip the pass), by [scenario, target].
func (r *session) syscallPasses() (map[[2]int]SyscallCount, error) {
	syscalls := map[[2]int]SyscallCount{}
	if r.opts.SyscallRequests <= 0 {
		return syscalls, nil
	}
	if err := r.opts.step("syscall pass", r.rep.Mode, func() error { return r.countSyscalls(syscalls) }); err != nil {
		return nil, err
	}
	return syscalls, nil
}

// countSyscalls is the syscall pass, into syscalls.
func (r *session) countSyscalls(syscalls map[[2]int]SyscallCount) error {
	for si, sc := range r.opts.Scenarios {
		for ti, s := range r.servers {
			c, err := syscallPass(r.ctx, s, sc, r.opts)
			if err != nil {
				return fmt.Errorf("target %s: %w", s.Name, err)
			}
			c.Target = s.Name
			syscalls[[2]int{si, ti}] = c
			r.opts.Progress.Send(progress.Detailf("syscalls %s %s: %.1f per request over %d requests (%s)", sc.Name, s.Name, c.PerRequest, c.Requests, c.Top(5)))
		}
	}
	return nil
}

// scenarioReports summarizes the runs of each scenario per target, with the ratios to the
// baseline, how out-of-box servers served it and the system calls counted.
func (r *session) scenarioReports(runs map[[2]int][]RunResult, syscalls map[[2]int]SyscallCount) {
	targets, baseline := r.targets, r.baseline
	for si, sc := range r.opts.Scenarios {
		sr := ScenarioReport{Name: sc.Name, Description: sc.Description, Connections: r.opts.connections(sc)}
		if sc.EqualBytes {
			sr.GzipLevels = r.gzipLevels
		}
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
