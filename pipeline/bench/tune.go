package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
)

// controlName is the sweep's second copy of the baseline.
const controlName = "baseline again (control)"

// TuneReport is the tuning sweep: every one-knob variant measured against the same baseline
// in one run, each variant's verdict, and the combination of the winners measured again.
type TuneReport struct {
	Base  Knobs        `json:"base"`
	Sweep *Report      `json:"sweep"`
	Knobs []KnobResult `json:"knobs"`
	// Best lists the variants the best combination applies (empty: none beat the baseline
	// beyond the noise, and the baseline config stays).
	Best      []string `json:"best"`
	BestKnobs Knobs    `json:"best_knobs"`
	// Confirm is baseline vs the best combination, measured after the sweep (nil when Best
	// is empty).
	Confirm *Report `json:"confirm,omitempty"`
}

// KnobResult is one variant's outcome.
type KnobResult struct {
	Variant   string            `json:"variant"`
	Knob      string            `json:"knob"`
	Scenarios []ScenarioVerdict `json:"scenarios"`
	// Better and Worse count scenarios with a verdict of "better" and "worse".
	Better, Worse int
	// Score is the geometric mean over scenarios of the median requests/s ratio.
	Score float64 `json:"score"`
}

// ScenarioVerdict judges one variant on one scenario against the baseline.
type ScenarioVerdict struct {
	Scenario string `json:"scenario"`
	Ratio    Ratio  `json:"ratio"`
	// Verdict is "better" when every round was faster (requests/s) by more than the noise
	// floor without costing more CPU per request, or every round cost less CPU per request
	// by more than the floor without being slower; "worse" in the mirror cases; "noise"
	// otherwise; "too few rounds" with fewer than minRounds.
	Verdict string `json:"verdict"`
	// Syscalls and BaselineSyscalls are the system calls per request of the variant's and
	// the baseline's workers in the syscall pass (0: no pass).
	Syscalls         float64 `json:"syscalls_per_request,omitempty"`
	BaselineSyscalls float64 `json:"baseline_syscalls_per_request,omitempty"`
}

// minRounds is the fewest rounds a verdict needs: with one or two, "every round" is luck.
const minRounds = 3

// noiseFloor is how far from 1 a ratio must be, at least, to count.
const noiseFloor = 0.02

// floor is the noise floor of one statistic: the control's largest deviation from 1 (the
// baseline config measured as a second server: any difference is noise), at least noiseFloor.
func floor(control Stat) float64 {
	return max(noiseFloor, math.Abs(control.Min-1), math.Abs(control.Max-1))
}

func verdict(q, control Ratio) string {
	if q.RequestsSec.N < minRounds {
		return "too few rounds"
	}
	rps, cpu := q.RequestsSec, q.CPUPerRequest
	fr, fc := floor(control.RequestsSec), floor(control.CPUPerRequest)
	switch {
	case rps.Min > 1+fr && cpu.Median <= 1, cpu.Max < 1-fc && rps.Median >= 1:
		return "better"
	case rps.Max < 1-fr && cpu.Median >= 1, cpu.Min > 1+fc && rps.Median <= 1:
		return "worse"
	}
	return "noise"
}

// Tune runs the tuning document's method on bin: starting from base (the shipped config's
// knobs), change one knob at a time, measure each variant against base in the same run, then
// combine the variants that helped (at most one per knob: the best scoring) and measure the
// combination against base again.
func Tune(ctx context.Context, bin string, base Knobs, opts Options) (*TuneReport, error) {
	if err := base.Validate(); err != nil {
		return nil, fmt.Errorf("baseline knobs: %w", err)
	}
	serverCPUs, _, err := cpuSplit()
	if err != nil {
		return nil, err
	}
	n := len(serverCPUs)
	if n == 0 || opts.NoPin {
		n = max(1, len(mustCPUs()))
	}
	variants := Variants(base, n)
	// The control is the baseline config again, as its own server: its ratios to the
	// baseline are pure noise, and set the floor a variant must clear.
	targets := []Target{{Name: "baseline", Binary: bin, Knobs: base}, {Name: controlName, Binary: bin, Knobs: base}}
	for _, v := range variants {
		k := base
		v.Apply(&k)
		targets = append(targets, Target{Name: v.Name, Binary: bin, Knobs: k})
	}
	sweep, err := Run(ctx, targets, 0, opts)
	if err != nil {
		return nil, fmt.Errorf("tuning sweep: %w", err)
	}
	tr := &TuneReport{Base: base, Sweep: sweep, BestKnobs: base}
	for i, v := range variants {
		kr := KnobResult{Variant: v.Name, Knob: v.Knob}
		logSum := 0.0
		for _, s := range sweep.Scenarios {
			q := s.Ratios[i+1] // Ratios[0] is the control's
			sv := ScenarioVerdict{Scenario: s.Name, Ratio: q, Verdict: verdict(q, s.Ratios[0])}
			if len(s.Syscalls) == len(targets) {
				// Syscalls are in target order: baseline, control, then the variants.
				sv.Syscalls, sv.BaselineSyscalls = s.Syscalls[i+2].PerRequest, s.Syscalls[0].PerRequest
			}
			switch sv.Verdict {
			case "better":
				kr.Better++
			case "worse":
				kr.Worse++
			}
			logSum += math.Log(q.RequestsSec.Median)
			kr.Scenarios = append(kr.Scenarios, sv)
		}
		kr.Score = math.Exp(logSum / float64(len(sweep.Scenarios)))
		tr.Knobs = append(tr.Knobs, kr)
	}
	// The winner per knob: helped somewhere, hurt nowhere; ties go to the higher score.
	best := map[string]int{}
	var order []string
	for i, kr := range tr.Knobs {
		if kr.Better == 0 || kr.Worse > 0 {
			continue
		}
		j, ok := best[kr.Knob]
		if !ok {
			order = append(order, kr.Knob)
		}
		if !ok || kr.Better > tr.Knobs[j].Better || kr.Better == tr.Knobs[j].Better && kr.Score > tr.Knobs[j].Score {
			best[kr.Knob] = i
		}
	}
	if len(order) == 0 {
		return tr, nil
	}
	for _, knob := range order {
		i := best[knob]
		variants[i].Apply(&tr.BestKnobs)
		tr.Best = append(tr.Best, variants[i].Name)
	}
	confirm, err := Run(ctx, []Target{{Name: "best", Binary: bin, Knobs: tr.BestKnobs}, {Name: "baseline", Binary: bin, Knobs: base}}, 1, opts)
	if err != nil {
		return nil, fmt.Errorf("measuring the best combination: %w", err)
	}
	tr.Confirm = confirm
	return tr, nil
}

func mustCPUs() []int {
	c, _ := allowedCPUs()
	return c
}

// WriteTable prints the per-knob deltas, the best combination and its confirmation.
func (tr *TuneReport) WriteTable(w io.Writer) error {
	for _, l := range tr.Sweep.Header()[:2] {
		fmt.Fprintln(w, l)
	}
	if len(tr.Sweep.Targets) > 0 {
		b := tr.Sweep.Targets[0].Binary
		fmt.Fprintf(w, "binary: %s (nginx %s, %s)\n", b.Path, b.Version, b.OpenSSL)
	}
	fmt.Fprintf(w, "baseline knobs: %s\n\n", describeKnobs(tr.Base))
	fmt.Fprintln(w, "one knob at a time vs baseline (per-round ratios: median (min..max))")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\tscenario\trequests/s\tp99\tCPU/request\tsyscalls/request\tverdict")
	for i, s := range tr.Sweep.Scenarios {
		name := controlName
		if i > 0 {
			name = ""
		}
		q := s.Ratios[0]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, s.Name, fmtRatio(q.RequestsSec), fmtRatio(q.P99), fmtRatio(q.CPUPerRequest), controlSyscalls(s), "(noise floor)")
	}
	for _, kr := range tr.Knobs {
		for i, sv := range kr.Scenarios {
			name := kr.Variant
			if i > 0 {
				name = ""
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, sv.Scenario, fmtRatio(sv.Ratio.RequestsSec), fmtRatio(sv.Ratio.P99), fmtRatio(sv.Ratio.CPUPerRequest), sv.syscalls(), sv.Verdict)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if len(tr.Best) == 0 {
		_, err := fmt.Fprintln(w, "best combination: the baseline; no variant beat it in every round by more than the control's noise in some scenario without being worse in another.")
		return err
	}
	fmt.Fprintf(w, "best combination: %s\n  knobs: %s\n\n", strings.Join(tr.Best, "; "), describeKnobs(tr.BestKnobs))
	fmt.Fprintln(w, "best combination vs baseline, measured again:")
	return tr.Confirm.WriteTable(w)
}

// WriteMarkdown renders the sweep for a step summary.
func (tr *TuneReport) WriteMarkdown(w io.Writer) error {
	fmt.Fprintf(w, "### Tuning sweep\n\nBaseline knobs: `%s`\n\n", describeKnobs(tr.Base))
	fmt.Fprintln(w, "| variant | scenario | requests/s | p99 | CPU/request | syscalls/request | verdict |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---|")
	for _, s := range tr.Sweep.Scenarios {
		q := s.Ratios[0]
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | (noise floor) |\n", controlName, s.Name, fmtRatio(q.RequestsSec), fmtRatio(q.P99), fmtRatio(q.CPUPerRequest), controlSyscalls(s))
	}
	for _, kr := range tr.Knobs {
		for _, sv := range kr.Scenarios {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", kr.Variant, sv.Scenario, fmtRatio(sv.Ratio.RequestsSec), fmtRatio(sv.Ratio.P99), fmtRatio(sv.Ratio.CPUPerRequest), sv.syscalls(), sv.Verdict)
		}
	}
	if len(tr.Best) == 0 {
		_, err := fmt.Fprintln(w, "\nBest combination: the baseline (no variant beat it beyond the noise).")
		return err
	}
	fmt.Fprintf(w, "\nBest combination: %s\n\n", strings.Join(tr.Best, "; "))
	return tr.Confirm.WriteMarkdown(w)
}

func describeKnobs(k Knobs) string {
	ofc := "off"
	if k.OpenFileCache != "" {
		ofc = k.OpenFileCache
		if k.OpenFileCacheValid != "" {
			ofc += ", valid " + k.OpenFileCacheValid
		}
	}
	rl := ""
	if k.WorkerRlimitNofile > 0 {
		rl = fmt.Sprintf(", worker_rlimit_nofile %d", k.WorkerRlimitNofile)
	}
	return fmt.Sprintf("worker_processes %s, worker_connections %d%s, open_file_cache %s, keepalive_requests %d, keepalive_timeout %s, ssl_session_cache %s, ssl_session_tickets %s, sendfile %s, tcp_nopush %s",
		k.WorkerProcesses, k.WorkerConnections, rl, ofc, k.KeepaliveRequests, k.KeepaliveTimeout, k.SSLSessionCache, onOff(k.SSLSessionTickets), onOff(k.Sendfile), onOff(k.TCPNopush))
}

// WriteJSON writes the sweep as indented JSON.
func (tr *TuneReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(tr)
}

// syscalls prints the variant's system calls per request with the baseline's.
func (sv ScenarioVerdict) syscalls() string {
	if sv.BaselineSyscalls == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f (baseline %.2f)", sv.Syscalls, sv.BaselineSyscalls)
}

// controlSyscalls prints the control's and the baseline's system calls per request: the same
// config twice, so their difference is the count's own noise.
func controlSyscalls(s ScenarioReport) string {
	if len(s.Syscalls) < 2 {
		return "-"
	}
	return fmt.Sprintf("%.2f (baseline %.2f)", s.Syscalls[1].PerRequest, s.Syscalls[0].PerRequest)
}
