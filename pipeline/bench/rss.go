package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// MemStatus is the memory of one process from /proc/PID/status, in KiB.
type MemStatus struct {
	PID int `json:"pid"`
	// PeakRSS is VmHWM, the largest resident set the process has had since it started;
	// RSS is VmRSS now. Both count shared pages (the binary's text, the shared TLS session
	// cache once touched) in full in every process that maps them.
	PeakRSS int64 `json:"peak_rss_kib"`
	RSS     int64 `json:"rss_kib"`
	// RssAnon, RssFile and RssShmem split RSS now: the process's private memory, mapped
	// files (the binary and libraries), and shared memory (nginx's shared zones, such as
	// ssl_session_cache shared:, which every worker that touches a page counts in full).
	RssAnon  int64 `json:"rss_anon_kib"`
	RssFile  int64 `json:"rss_file_kib"`
	RssShmem int64 `json:"rss_shmem_kib"`
}

// readMemStatus reads VmHWM and VmRSS of pid.
func readMemStatus(pid int) (MemStatus, error) {
	st, err := toolbox.ProcStatus(pid)
	if err != nil {
		return MemStatus{}, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	return parseMemStatus(pid, st)
}

func parseMemStatus(pid int, status string) (MemStatus, error) {
	m := MemStatus{PID: pid}
	var haveHWM, haveRSS bool
	for _, line := range strings.Split(status, "\n") {
		k, v, ok := strings.Cut(line, ":")
		var dst *int64
		switch k {
		case "VmHWM":
			dst, haveHWM = &m.PeakRSS, true
		case "VmRSS":
			dst, haveRSS = &m.RSS, true
		case "RssAnon":
			dst = &m.RssAnon
		case "RssFile":
			dst = &m.RssFile
		case "RssShmem":
			dst = &m.RssShmem
		}
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			return m, fmt.Errorf("/proc/%d/status: %s: want \"N kB\", got %q", pid, k, strings.TrimSpace(v))
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return m, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		*dst = n
	}
	if !haveHWM || !haveRSS {
		// Kernel threads and zombies have no Vm* lines.
		return m, fmt.Errorf("/proc/%d/status has no VmHWM/VmRSS (a kernel thread or an exited process?)", pid)
	}
	return m, nil
}

// ServerMemory is the memory of an nginx master and its workers at one moment.
type ServerMemory struct {
	Master  MemStatus   `json:"master"`
	Workers []MemStatus `json:"workers"`
	// MaxWorkerPeakRSS is the largest VmHWM among the workers, in KiB.
	MaxWorkerPeakRSS int64 `json:"max_worker_peak_rss_kib"`
}

// readServerMemory reads the master's and every worker's memory.
func readServerMemory(master int) (ServerMemory, error) {
	m, err := readMemStatus(master)
	if err != nil {
		return ServerMemory{}, err
	}
	sm := ServerMemory{Master: m}
	pids, err := Workers(master)
	if err != nil {
		return sm, err
	}
	for _, p := range pids {
		w, err := readMemStatus(p)
		if err != nil {
			continue // exited between the listing and the read
		}
		sm.Workers = append(sm.Workers, w)
		sm.MaxWorkerPeakRSS = max(sm.MaxWorkerPeakRSS, w.PeakRSS)
	}
	if len(sm.Workers) == 0 {
		return sm, fmt.Errorf("nginx master %d has no workers", master)
	}
	slices.SortFunc(sm.Workers, func(a, b MemStatus) int { return a.PID - b.PID })
	return sm, nil
}
