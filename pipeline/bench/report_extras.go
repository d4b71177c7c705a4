package bench

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"
)

// writeExtras prints what the report has beyond the timed figures: how each server served
// the scenarios that ask for compression (and, out of the box, every scenario), system calls per request, and memory. md selects Markdown tables.
func (r *Report) writeExtras(w io.Writer, md bool) error {
	var served []string
	for _, s := range r.Scenarios {
		var parts []string
		for _, res := range s.Results {
			if res.ContentEncoding != "" {
				parts = append(parts, fmt.Sprintf("%s %s, %d bytes", res.Target, res.ContentEncoding, res.BodyBytes))
			}
		}
		if len(parts) > 0 {
			served = append(served, fmt.Sprintf("%s: %s", s.Name, strings.Join(parts, "; ")))
		}
	}
	if len(served) > 0 {
		fmt.Fprint(w, "\nResponses as served, bytes of the body (compare CPU per request at equal or fewer bytes; out of the box a config may not compress what another does, and CPU per request then compares different work):\n\n")
		for _, l := range served {
			if md {
				fmt.Fprintf(w, "- %s\n", l)
			} else {
				fmt.Fprintf(w, "  %s\n", l)
			}
		}
	}

	r.writeGzipLevels(w, md)
	r.writeKernelSplit(w, md)

	haveSys := false
	for _, s := range r.Scenarios {
		haveSys = haveSys || len(s.Syscalls) > 0
	}
	if haveSys {
		intro := fmt.Sprintf("System calls per request of the workers (strace -c -f, a separate pass of %d requests per scenario and server after the timed rounds; fewer for the 10 MiB file; the most frequent calls per request):", r.SyscallRequests)
		rows := [][]string{}
		for _, s := range r.Scenarios {
			var base float64
			for _, c := range s.Syscalls {
				if c.Target == r.Baseline {
					base = c.PerRequest
				}
			}
			for _, c := range s.Syscalls {
				vs := "-"
				if base > 0 && c.Target != r.Baseline {
					vs = fmt.Sprintf("%.2f", c.PerRequest/base)
				}
				rows = append(rows, []string{s.Name, c.Target, fmt.Sprintf("%.2f", c.PerRequest), vs, c.Top(6)})
			}
		}
		writeRows(w, md, intro, []string{"scenario", "server", "syscalls/request", "vs " + r.Baseline, "top calls per request"}, rows)
	}

	haveMem := false
	for _, t := range r.Targets {
		haveMem = haveMem || t.Memory != nil
	}
	if haveMem {
		rows := [][]string{}
		for _, t := range r.Targets {
			if t.Memory == nil {
				continue
			}
			var each []string
			for _, wk := range t.Memory.Workers {
				each = append(each, mib(wk.PeakRSS))
			}
			var split []string
			for _, wk := range t.Memory.Workers {
				split = append(split, fmt.Sprintf("%s / %s / %s", mib(wk.RssAnon), mib(wk.RssFile), mib(wk.RssShmem)))
			}
			rows = append(rows, []string{t.Name, fmt.Sprint(len(t.Memory.Workers)), mib(t.Memory.MaxWorkerPeakRSS), strings.Join(each, ", "),
				strings.Join(split, ", "), mib(t.Memory.Master.PeakRSS)})
		}
		writeRows(w, md, "Memory at the end of the timed rounds, from /proc/PID/status: peak RSS is VmHWM, the largest resident set since start, in which shared pages (the binary, libraries, shared zones such as ssl_session_cache) count in full in every process; RSS now is split into private (RssAnon), file (RssFile) and shared memory (RssShmem):",
			[]string{"server", "workers", "peak RSS per worker MiB (max)", "each worker", "RSS now private / file / shared MiB", "master peak RSS MiB"}, rows)
	}
	return nil
}

// writeKernelSplit prints, per scenario and server, how the server's CPU per request divides
// between its own code (user) and the kernel (system): a build (compiler flags, PGO, the TLS
// library) can only move the user part.
func (r *Report) writeKernelSplit(w io.Writer, md bool) {
	var rows [][]string
	for _, s := range r.Scenarios {
		for _, res := range s.Results {
			if res.SystemShare.N == 0 {
				continue
			}
			var user []float64
			for _, run := range res.Runs {
				if run.Requests > 0 {
					user = append(user, float64(run.ServerCPU-run.ServerSystemCPU)/float64(run.Requests)/float64(time.Microsecond))
				}
			}
			rows = append(rows, []string{s.Name, res.Target, fmtStat(res.CPUPerRequest), fmtStat(newStat(user)),
				fmtStat(res.SystemPerRequest), fmt.Sprintf("%.0f%% (%.0f..%.0f)", 100*res.SystemShare.Median, 100*res.SystemShare.Min, 100*res.SystemShare.Max)})
		}
	}
	if len(rows) == 0 {
		return
	}
	writeRows(w, md, "Where the server's CPU per request goes (from /proc/PID/stat of master and workers over the timed rounds; user is the server's own code and libraries, system the kernel on its behalf):",
		[]string{"scenario", "server", "CPU µs/request", "user µs", "system µs", "in the kernel"}, rows)
}

// writeGzipLevels prints, for each EqualBytes scenario, every server's chosen level and its
// bytes at every level.
func (r *Report) writeGzipLevels(w io.Writer, md bool) {
	for _, s := range r.Scenarios {
		if len(s.GzipLevels) == 0 {
			continue
		}
		head := []string{"server", "level", "bytes"}
		for l := 1; l <= maxGzipLevel; l++ {
			head = append(head, fmt.Sprintf("level %d", l))
		}
		var rows [][]string
		for _, g := range s.GzipLevels {
			level := fmt.Sprint(g.Level)
			if !g.Fits {
				level += " (none fits: fewest bytes)"
			}
			row := []string{g.Target, level, fmt.Sprint(g.Bytes)}
			for _, n := range g.Sizes {
				row = append(row, fmt.Sprint(n))
			}
			rows = append(rows, row)
		}
		intro := fmt.Sprintf("%s: each server at the lowest gzip_comp_level whose response is no larger than %s's at level %d, nginx's default (%d bytes); bytes of the body at every level, one request each before the rounds:",
			s.Name, r.Baseline, referenceGzipLevel, s.GzipLevels[0].Bound)
		writeRows(w, md, intro, head, rows)
	}
}

func mib(kib int64) string {
	v := float64(kib) / 1024
	if math.Abs(v) >= 100 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func writeRows(w io.Writer, md bool, intro string, head []string, rows [][]string) {
	fmt.Fprintf(w, "\n%s\n\n", intro)
	if md {
		fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(head)))
		for _, r := range rows {
			fmt.Fprintf(w, "| %s |\n", strings.Join(r, " | "))
		}
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	tw.Flush()
}
