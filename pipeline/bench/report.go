package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is one benchmark run: machine, servers, and per scenario the results of every
// target and their ratios to the baseline.
type Report struct {
	Machine    Machine          `json:"machine"`
	Started    time.Time        `json:"started"`
	Elapsed    time.Duration    `json:"elapsed_ns"`
	Duration   time.Duration    `json:"duration_ns"`
	Rounds     int              `json:"rounds"`
	Threads    int              `json:"wrk_threads"`
	ServerCPUs []int            `json:"server_cpus"`
	ClientCPUs []int            `json:"wrk_cpus"`
	Baseline   string           `json:"baseline"`
	Targets    []TargetInfo     `json:"targets"`
	Scenarios  []ScenarioReport `json:"scenarios"`
	// Mode is ModeLikeForLike (every server gets the benchmark's template with its Knobs) or
	// ModeOutOfBox (every server gets its own Profile).
	Mode string `json:"mode,omitempty"`
	// SyscallRequests is the request count of the syscall pass (0: no pass).
	SyscallRequests int `json:"syscall_requests,omitempty"`
	// OutOfBox is a second run, out of the box, beside this like-for-like one (ci bench).
	OutOfBox *Report `json:"out_of_box,omitempty"`
}

// The two ways of configuring the servers under test.
const (
	ModeLikeForLike = "like-for-like"
	ModeOutOfBox    = "out-of-box"
)

// Machine names the machine the numbers were measured on.
type Machine struct {
	CPUModel string `json:"cpu_model"`
	CPUs     int    `json:"cpus"`
	Kernel   string `json:"kernel"`
	GOARCH   string `json:"goarch"`
}

// describeMachine reads the CPU model and kernel release.
func describeMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), GOARCH: runtime.GOARCH}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// TargetInfo says what a target ran.
type TargetInfo struct {
	Name   string     `json:"name"`
	Binary BinaryInfo `json:"binary"`
	Knobs  Knobs      `json:"knobs"`
	// Profile is the target's own config, out of the box (nil: the template with Knobs).
	Profile *Profile `json:"profile,omitempty"`
	// Memory is the master's and workers' memory at the end of the timed rounds.
	Memory   *ServerMemory `json:"memory,omitempty"`
	ErrorLog string        `json:"error_log,omitempty"`
}

// ScenarioReport holds one scenario's results.
type ScenarioReport struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Connections int      `json:"connections"`
	Results     []Result `json:"results"`
	Ratios      []Ratio  `json:"ratios"`
	// Syscalls has one count per target (in Results' order) from the syscall pass.
	Syscalls []SyscallCount `json:"syscalls,omitempty"`
	// GzipLevels, for an EqualBytes scenario, is each target's level and the probe behind it.
	GzipLevels []GzipLevelChoice `json:"gzip_levels,omitempty"`
}

// Result is one target's runs of one scenario and their summary.
type Result struct {
	Target string      `json:"target"`
	Runs   []RunResult `json:"runs"`
	// RequestsSec in requests/s, P50 and P99 in milliseconds, CPUPerRequest in microseconds
	// of server CPU (user+system of master and workers) per request.
	RequestsSec   Stat `json:"requests_per_sec"`
	P50           Stat `json:"p50_ms"`
	P99           Stat `json:"p99_ms"`
	CPUPerRequest Stat `json:"cpu_us_per_request"`
	// SystemPerRequest is the part of CPUPerRequest spent in the kernel (system time), in
	// microseconds, and SystemShare that part as a fraction of the server's CPU per run.
	SystemPerRequest Stat `json:"system_cpu_us_per_request"`
	SystemShare      Stat `json:"system_share"`
	// ContentEncoding and BodyBytes say how the server served the scenario's response: for
	// every scenario out of the box (a config may not compress what another does), and for the
	// scenarios that ask for compression in both modes (bytes on the wire per response).
	ContentEncoding string `json:"content_encoding,omitempty"`
	BodyBytes       int    `json:"body_bytes,omitempty"`
}

// RunResult is one wrk run against one server.
type RunResult struct {
	Round int `json:"round"`
	// Order is the position of this run within its round and scenario (1 = first).
	Order int `json:"order"`
	WrkResult
	ServerCPU time.Duration `json:"server_cpu_ns"`
	// ServerSystemCPU is the part of ServerCPU spent in the kernel.
	ServerSystemCPU time.Duration `json:"server_system_cpu_ns"`
	CPUPerRequest   time.Duration `json:"cpu_per_request_ns"`
	// WorkerPeakRSS is the largest VmHWM among the workers after this run, in KiB (VmHWM
	// is a peak since start, so it only grows from run to run).
	WorkerPeakRSS int64 `json:"worker_peak_rss_kib,omitempty"`
}

// Ratio compares a target with the baseline: each statistic is over the per-round ratios
// (target's run / baseline's run in the same round), so a drift of the machine between
// rounds cancels out. For requests/s above 1 is better; for latency and CPU, below 1.
type Ratio struct {
	Target        string `json:"target"`
	Baseline      string `json:"baseline"`
	RequestsSec   Stat   `json:"requests_per_sec"`
	P50           Stat   `json:"p50"`
	P99           Stat   `json:"p99"`
	CPUPerRequest Stat   `json:"cpu_per_request"`
}

// Stat is a median with its spread (smallest and largest value).
type Stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	N      int     `json:"n"`
}

// newStat summarizes values.
func newStat(v []float64) Stat {
	if len(v) == 0 {
		return Stat{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	s := slices.Clone(v)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Stat{Median: med, Min: s[0], Max: s[len(s)-1], N: len(s)}
}

// Contains reports whether x lies within the spread.
func (s Stat) Contains(x float64) bool { return s.Min <= x && x <= s.Max }

func summarize(target string, runs []RunResult) Result {
	var rps, p50, p99, cpu, sys, share []float64
	for _, r := range runs {
		rps = append(rps, r.RequestsSec)
		p50 = append(p50, ms(r.P50))
		p99 = append(p99, ms(r.P99))
		cpu = append(cpu, float64(r.CPUPerRequest)/float64(time.Microsecond))
		if r.Requests > 0 {
			sys = append(sys, float64(r.ServerSystemCPU)/float64(r.Requests)/float64(time.Microsecond))
		}
		if r.ServerCPU > 0 {
			share = append(share, float64(r.ServerSystemCPU)/float64(r.ServerCPU))
		}
	}
	return Result{Target: target, Runs: runs, RequestsSec: newStat(rps), P50: newStat(p50), P99: newStat(p99), CPUPerRequest: newStat(cpu),
		SystemPerRequest: newStat(sys), SystemShare: newStat(share)}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ratio(target, baseline string, a, b []RunResult) Ratio {
	var rps, p50, p99, cpu []float64
	for i := range min(len(a), len(b)) {
		rps = append(rps, div(a[i].RequestsSec, b[i].RequestsSec))
		p50 = append(p50, div(float64(a[i].P50), float64(b[i].P50)))
		p99 = append(p99, div(float64(a[i].P99), float64(b[i].P99)))
		cpu = append(cpu, div(float64(a[i].CPUPerRequest), float64(b[i].CPUPerRequest)))
	}
	return Ratio{Target: target, Baseline: baseline, RequestsSec: newStat(rps), P50: newStat(p50), P99: newStat(p99), CPUPerRequest: newStat(cpu)}
}

func div(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// fmtStat prints "median (min..max)" with a precision suited to the magnitude.
func fmtStat(s Stat) string {
	if math.IsNaN(s.Median) {
		return "-"
	}
	if s.N <= 1 {
		return num(s.Median)
	}
	return fmt.Sprintf("%s (%s..%s)", num(s.Median), num(s.Min), num(s.Max))
}

func num(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func fmtRatio(s Stat) string {
	if math.IsNaN(s.Median) {
		return "-"
	}
	if s.N <= 1 {
		return fmt.Sprintf("%.2f", s.Median)
	}
	return fmt.Sprintf("%.2f (%.2f..%.2f)", s.Median, s.Min, s.Max)
}

// Header describes the run in a few lines.
func (r *Report) Header() []string {
	lines := []string{fmt.Sprintf("machine: %s, %d CPUs, kernel %s", r.Machine.CPUModel, r.Machine.CPUs, r.Machine.Kernel)}
	pin := "not pinned (fewer than 2 CPUs, or --no-pin)"
	if len(r.ServerCPUs) > 0 {
		pin = fmt.Sprintf("servers on CPU %s, wrk (%d threads) on CPU %s", cpuList(r.ServerCPUs), r.Threads, cpuList(r.ClientCPUs))
	}
	lines = append(lines, fmt.Sprintf("%d rounds of %v per scenario and server, alternating order; %s", r.Rounds, r.Duration, pin))
	for _, t := range r.Targets {
		lines = append(lines, fmt.Sprintf("%s: %s (nginx %s, %s)", t.Name, t.Binary.Path, t.Binary.Version, t.Binary.OpenSSL))
	}
	switch r.Mode {
	case ModeOutOfBox:
		lines = append(lines, "out of the box: each server runs its own config, as its users get it")
		for _, t := range r.Targets {
			if t.Profile != nil {
				lines = append(lines, fmt.Sprintf("%s config: %s (%s)", t.Name, t.Profile.Name, t.Profile.Source))
			}
		}
	case ModeLikeForLike:
		lines = append(lines, "like for like: every server gets the same config template and knobs")
	}
	return lines
}

// WriteTable prints the results as aligned text: absolute figures per scenario and server,
// then the ratios to the baseline.
func (r *Report) WriteTable(w io.Writer) error {
	for _, l := range r.Header() {
		fmt.Fprintln(w, l)
	}
	fmt.Fprintln(w, "values: median (min..max) over the rounds")
	fmt.Fprintln(w)
	if err := textTable(w, "scenario\tserver\trequests/s\tp50 ms\tp99 ms\tserver CPU µs/request", r.figureRows(false)); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nratios to %s (per-round ratios: median (min..max); requests/s above 1 is faster, latency and CPU below 1 is better)\n\n", r.Baseline)
	if err := textTable(w, "scenario\tserver\trequests/s\tp50\tp99\tCPU/request", r.figureRows(true)); err != nil {
		return err
	}
	if err := r.writeExtras(w, false); err != nil {
		return err
	}
	if r.OutOfBox != nil {
		fmt.Fprint(w, "\n==== out of the box ====\n\n")
		return r.OutOfBox.WriteTable(w)
	}
	return nil
}

// WriteMarkdown renders the report for a GitHub step summary or a README.
func (r *Report) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "### Benchmark: %s\n\n", strings.Join(targetNames(r), " vs "))
	for _, l := range r.Header() {
		fmt.Fprintf(w, "- %s\n", l)
	}
	fmt.Fprint(w, "\nValues are median (min..max) over the rounds.\n\n")
	fmt.Fprintln(w, "| scenario | server | requests/s | p50 ms | p99 ms | server CPU µs/request |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	markdownRows(w, r.figureRows(false))
	fmt.Fprintf(w, "\nRatios to %s (per-round ratios; requests/s above 1 is faster, latency and CPU below 1 is better):\n\n", r.Baseline)
	fmt.Fprintln(w, "| scenario | server | requests/s | p50 | p99 | CPU/request |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
	markdownRows(w, r.figureRows(true))
	if err := r.writeExtras(w, true); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w); err != nil {
		return err
	}
	if r.OutOfBox != nil {
		fmt.Fprint(w, "#### Out of the box\n\n")
		return r.OutOfBox.WriteMarkdown(w)
	}
	return nil
}

// figureRows is one row per scenario and server: the scenario, the server, then the four
// figures (requests/s, p50, p99, CPU per request) of its results, or of its ratios to the
// baseline.
func (r *Report) figureRows(ratios bool) [][]string {
	var rows [][]string
	for _, s := range r.Scenarios {
		if ratios {
			for _, q := range s.Ratios {
				rows = append(rows, []string{s.Name, q.Target, fmtRatio(q.RequestsSec), fmtRatio(q.P50), fmtRatio(q.P99), fmtRatio(q.CPUPerRequest)})
			}
			continue
		}
		for _, res := range s.Results {
			rows = append(rows, []string{s.Name, res.Target, fmtStat(res.RequestsSec), fmtStat(res.P50), fmtStat(res.P99), fmtStat(res.CPUPerRequest)})
		}
	}
	return rows
}

// textTable writes rows under header (tab-separated), aligned, naming each scenario on its
// first row only.
func textTable(w io.Writer, header string, rows [][]string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	for i, row := range rows {
		cells := append([]string(nil), row...)
		if i > 0 && rows[i-1][0] == row[0] {
			cells[0] = ""
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// markdownRows writes rows as the lines of a Markdown table.
func markdownRows(w io.Writer, rows [][]string) {
	for _, row := range rows {
		fmt.Fprintf(w, "| %s |\n", strings.Join(row, " | "))
	}
}

func targetNames(r *Report) []string {
	var n []string
	for _, t := range r.Targets {
		n = append(n, t.Name)
	}
	return n
}
