package bench

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// procStat is the CPU accounting of one process from /proc/<pid>/stat.
type procStat struct {
	PID, PPID int
	// User and System are the process's own CPU time; ChildUser and ChildSystem are those of
	// its children that exited and were waited for.
	User, System, ChildUser, ChildSystem time.Duration
}

// readProcStat reads /proc/<pid>/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	return parseProcStat(pid, b)
}

func parseProcStat(pid int, b []byte) (procStat, error) {
	// The command name (field 2) is in parentheses and may contain spaces and ')'; the
	// fields after the last ')' are plain: state(3) ppid(4) ... utime(14) stime(15)
	// cutime(16) cstime(17).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: no ')' in %q", pid, s)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("parsing /proc/%d/stat: %d fields after the name, want >= 15", pid, len(f))
	}
	num := func(k int) (int64, error) { return strconv.ParseInt(f[k], 10, 64) }
	st := procStat{PID: pid}
	ppid, err := num(1)
	if err != nil {
		return st, fmt.Errorf("parsing /proc/%d/stat ppid: %w", pid, err)
	}
	st.PPID = int(ppid)
	tick := clockTick()
	for k, dst := range map[int]*time.Duration{11: &st.User, 12: &st.System, 13: &st.ChildUser, 14: &st.ChildSystem} {
		v, err := num(k)
		if err != nil {
			return st, fmt.Errorf("parsing /proc/%d/stat field %d: %w", pid, k+3, err)
		}
		*dst = time.Duration(v) * tick
	}
	return st, nil
}

// cpuTimes is CPU time split by where it was spent: User in the process's own code and
// libraries (nginx, its TLS library, zlib, glibc), System in the kernel on its behalf (system
// calls, the TCP stack, page faults). The split says whether a scenario's cost is one a build
// can move (user) or one only fewer or cheaper system calls can (system).
type cpuTimes struct {
	User, System time.Duration
}

// Total is user plus system time.
func (c cpuTimes) Total() time.Duration { return c.User + c.System }

// Sub is c - o, field by field.
func (c cpuTimes) Sub(o cpuTimes) cpuTimes {
	return cpuTimes{User: c.User - o.User, System: c.System - o.System}
}

func (c *cpuTimes) add(st procStat) {
	c.User += st.User + st.ChildUser
	c.System += st.System + st.ChildSystem
}

// treeCPU is the CPU time used so far by pid and all its live descendants, plus the children
// they have reaped. For nginx: the master, its workers and cache processes; a worker that
// exited and was reaped by the master still counts, through the master's child times.
func treeCPU(pid int) (cpuTimes, error) {
	root, err := readProcStat(pid)
	if err != nil {
		return cpuTimes{}, err
	}
	// Build the parent -> children map from every process once: /proc/<pid>/task/*/children
	// needs CONFIG_PROC_CHILDREN, the scan works everywhere.
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return cpuTimes{}, fmt.Errorf("listing /proc: %w", err)
	}
	kids := map[int][]procStat{}
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil || p == pid {
			continue
		}
		st, err := readProcStat(p)
		if err != nil {
			continue // exited while scanning
		}
		kids[st.PPID] = append(kids[st.PPID], st)
	}
	var total cpuTimes
	total.add(root)
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, k := range kids[p] {
			total.add(k)
			queue = append(queue, k.PID)
		}
	}
	return total, nil
}

// clockTick is the unit of /proc/<pid>/stat times (USER_HZ, almost always 1/100 s), read from
// the AT_CLKTCK entry of the auxiliary vector the kernel gave this process.
var clockTick = sync.OnceValue(func() time.Duration {
	tick := 10 * time.Millisecond
	b, err := os.ReadFile(filepath.Join("/proc", "self", "auxv"))
	if err != nil || len(b)%16 != 0 {
		return tick
	}
	const atClkTck = 17
	for i := 0; i+16 <= len(b); i += 16 {
		k := binary.NativeEndian.Uint64(b[i:])
		v := binary.NativeEndian.Uint64(b[i+8:])
		if k == atClkTck && v > 0 && v <= 1_000_000 {
			tick = time.Second / time.Duration(v)
			break
		}
	}
	return tick
})
