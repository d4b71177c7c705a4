package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
)

// There is no per-process system call counter in /proc, so the count comes from strace -c,
// attached to the workers for a separate, short pass of a fixed number of requests after the
// timed rounds: tracing stops the traced process at every system call and would distort the
// CPU figures if it ran during them.

// SyscallCount is what strace -c counted in one server's workers over a fixed number of
// requests of one scenario.
type SyscallCount struct {
	Target   string `json:"target"`
	Requests int    `json:"requests"`
	// Connections is how many concurrent connections made the requests.
	Connections int `json:"connections"`
	// Total is every system call of the workers during the pass; PerRequest is Total/Requests.
	Total      int64   `json:"total"`
	Errors     int64   `json:"errors"`
	PerRequest float64 `json:"per_request"`
	// Calls lists every system call seen, most frequent first.
	Calls []SyscallStat `json:"calls"`
}

// SyscallStat is one row of strace -c.
type SyscallStat struct {
	Name       string  `json:"name"`
	Calls      int64   `json:"calls"`
	Errors     int64   `json:"errors,omitempty"`
	PerRequest float64 `json:"per_request"`
}

// Top returns the n most frequent calls as "name 1.00" pairs, for the tables.
func (c SyscallCount) Top(n int) string {
	var parts []string
	for i, s := range c.Calls {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", s.Name, s.PerRequest))
	}
	return strings.Join(parts, ", ")
}

// parseStraceSummary reads the table strace -c writes (-o FILE): one row per system call
// ("% time, seconds, usecs/call, calls, errors, syscall"; the errors column may be empty)
// and a "total" row, which must agree with the rows. Calls are sorted by count, most first.
func parseStraceSummary(r io.Reader) (calls []SyscallStat, total, errs int64, err error) {
	sc := bufio.NewScanner(r)
	haveTotal := false
	var sum int64
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		if len(f) < 5 || strings.HasPrefix(line, "%") || strings.HasPrefix(line, "-") {
			continue
		}
		// % time, seconds, usecs/call are numbers; then calls, [errors], name.
		if _, err := strconv.ParseFloat(f[0], 64); err != nil {
			continue
		}
		name := f[len(f)-1]
		n, err := strconv.ParseInt(f[3], 10, 64)
		if err != nil {
			return nil, 0, 0, fmt.Errorf("strace -c row %q: calls: %w", line, err)
		}
		var e int64
		switch len(f) {
		case 5:
		case 6:
			if e, err = strconv.ParseInt(f[4], 10, 64); err != nil {
				return nil, 0, 0, fmt.Errorf("strace -c row %q: errors: %w", line, err)
			}
		default:
			return nil, 0, 0, fmt.Errorf("strace -c row %q: want 5 or 6 columns", line)
		}
		if name == "total" {
			if haveTotal {
				return nil, 0, 0, fmt.Errorf("strace -c output has two total rows (several personalities?)")
			}
			total, errs, haveTotal = n, e, true
			continue
		}
		sum += n
		calls = append(calls, SyscallStat{Name: name, Calls: n, Errors: e})
	}
	if err := sc.Err(); err != nil {
		return nil, 0, 0, err
	}
	if !haveTotal {
		return nil, 0, 0, fmt.Errorf("strace -c output has no total row")
	}
	if sum != total {
		return nil, 0, 0, fmt.Errorf("strace -c rows add up to %d calls, its total row says %d", sum, total)
	}
	slices.SortStableFunc(calls, func(a, b SyscallStat) int {
		if a.Calls != b.Calls {
			if a.Calls > b.Calls {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return calls, total, errs, nil
}

// Workers lists the live child processes of an nginx master (its workers; cache processes
// too, when configured).
func Workers(master int) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readProcStat(p); err == nil && st.PPID == master {
			pids = append(pids, p)
		}
	}
	slices.Sort(pids)
	return pids, nil
}

// traceSyscalls runs warm (if not nil), attaches `strace -c -f` to pids, runs load once every
// pid is traced, detaches, and returns the counts divided by the requests load reports. The
// whole pass is bounded by timeout; strace's own errors (no permission to trace, say) are
// returned with its output.
func traceSyscalls(ctx context.Context, strace string, pids []int, timeout time.Duration, warm func(context.Context) error, load func(context.Context) (int, error)) (SyscallCount, error) {
	if len(pids) == 0 {
		return SyscallCount{}, fmt.Errorf("strace: no processes to trace")
	}
	if strace == "" {
		strace = "strace"
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if warm != nil {
		if err := warm(ctx); err != nil {
			return SyscallCount{}, err
		}
	}
	dir, err := os.MkdirTemp("", "nginx-forge-strace-")
	if err != nil {
		return SyscallCount{}, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "summary")
	t, err := startStrace(strace, pids, out)
	if err != nil {
		return SyscallCount{}, err
	}
	if err := t.waitAttached(ctx, pids); err != nil {
		return SyscallCount{}, err
	}
	requests, lerr := load(ctx)
	serr := t.stop()
	if lerr != nil {
		return SyscallCount{}, lerr
	}
	if serr != nil && !isSignalExit(serr) {
		return SyscallCount{}, fmt.Errorf("strace: %v\n%s", serr, t.stderr.Bytes())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		return SyscallCount{}, fmt.Errorf("strace wrote no summary: %w\n%s", err, t.stderr.Bytes())
	}
	return perRequest(b, requests)
}

// tracer is a running `strace -c`.
type tracer struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	done   chan error
}

// startStrace attaches `strace -c -f` to pids, writing its summary to out when stopped.
func startStrace(strace string, pids []int, out string) (*tracer, error) {
	args := []string{"-c", "-f", "-q", "-o", out}
	for _, p := range pids {
		args = append(args, "-p", strconv.Itoa(p))
	}
	t := &tracer{cmd: exec.Command(strace, args...), done: make(chan error, 1)}
	t.cmd.Stderr = &t.stderr
	t.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := t.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting strace (install strace, or turn the syscall pass off): %w", err)
	}
	go func() { t.done <- t.cmd.Wait() }()
	return t, nil
}

// stop makes strace detach and write the summary, and waits for it to exit.
func (t *tracer) stop() error {
	_ = t.cmd.Process.Signal(syscall.SIGINT) // strace detaches and writes the summary
	select {
	case err := <-t.done:
		return err
	case <-time.After(10 * time.Second):
		_ = t.cmd.Process.Kill()
		<-t.done
		return fmt.Errorf("strace did not exit within 10s of SIGINT; killed")
	}
}

// waitAttached returns once every traced process names a tracer in /proc/PID/status; it
// fails when strace exits first or ctx ends (then strace is stopped).
func (t *tracer) waitAttached(ctx context.Context, pids []int) error {
	for {
		n := 0
		for _, p := range pids {
			if tracer, err := tracerPID(p); err == nil && tracer != 0 {
				n++
			}
		}
		if n == len(pids) {
			return nil
		}
		select {
		case err := <-t.done:
			return fmt.Errorf("strace exited before attaching: %v\n%s", err, t.stderr.Bytes())
		case <-ctx.Done():
			_ = t.stop()
			return fmt.Errorf("strace did not attach to %v: %w\n%s", pids, ctx.Err(), t.stderr.Bytes())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// perRequest reads strace's summary and divides its counts by requests.
func perRequest(summary []byte, requests int) (SyscallCount, error) {
	calls, total, errs, err := parseStraceSummary(bytes.NewReader(summary))
	if err != nil {
		return SyscallCount{}, fmt.Errorf("%w\n%s", err, summary)
	}
	if requests <= 0 {
		return SyscallCount{}, fmt.Errorf("the syscall pass completed no requests")
	}
	c := SyscallCount{Requests: requests, Total: total, Errors: errs, PerRequest: float64(total) / float64(requests), Calls: calls}
	for i := range c.Calls {
		c.Calls[i].PerRequest = float64(c.Calls[i].Calls) / float64(requests)
	}
	return c, nil
}

func isSignalExit(err error) bool {
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && (ws.Signaled() || ws.ExitStatus() == 130)
}

func tracerPID(pid int) (int, error) {
	st, err := toolbox.ProcStatus(pid)
	if err != nil {
		return 0, err
	}
	if v, ok := toolbox.StatusField(st, "TracerPid"); ok {
		return strconv.Atoi(v)
	}
	return 0, fmt.Errorf("no TracerPid in /proc/%d/status", pid)
}

// fixedLoad makes a fixed number of the scenario's requests with Go's HTTP client (wrk runs
// for a time, not a count) over a fixed number of concurrent connections. TLS sessions are
// resumed when the scenario's listener allows it (as wrk does), "Connection: close"
// scenarios open a connection per request, and only the classical key exchange groups wrk's
// OpenSSL offers are proposed. Warm opens the keep-alive connections before the count starts,
// so that a keep-alive figure is the steady state of long-lived connections, as in wrk's
// runs, not their setup spread over a few requests.
type fixedLoad struct {
	sc        Scenario
	c         Config
	requests  int
	conns     int
	closeEach bool
	tr        *http.Transport
	client    *http.Client
}

// newFixedLoad prepares requests requests of sc against c over conns connections; Close
// releases its connections.
func newFixedLoad(sc Scenario, c Config, requests, conns int) *fixedLoad {
	l := &fixedLoad{sc: sc, c: c, requests: requests, conns: max(1, conns)}
	for _, h := range sc.Headers {
		k, v, _ := strings.Cut(h, ":")
		if strings.EqualFold(strings.TrimSpace(k), "Connection") && strings.EqualFold(strings.TrimSpace(v), "close") {
			l.closeEach = true
		}
	}
	tc := &tls.Config{InsecureSkipVerify: true, // our own self-signed certificate on loopback
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256}}
	if !sc.FullHandshake {
		tc.ClientSessionCache = tls.NewLRUClientSessionCache(l.conns)
	}
	l.tr = &http.Transport{TLSClientConfig: tc, DisableCompression: true, DisableKeepAlives: l.closeEach,
		MaxIdleConnsPerHost: l.conns, MaxConnsPerHost: l.conns}
	l.client = &http.Client{Transport: l.tr}
	return l
}

// Close closes the idle connections.
func (l *fixedLoad) Close() { l.tr.CloseIdleConnections() }

// Warm makes one request per connection, all at once, so the keep-alive connections (and
// TLS sessions) exist before Run is counted.
func (l *fixedLoad) Warm(ctx context.Context) error {
	_, err := l.do(ctx, l.conns)
	return err
}

// Run makes the requests and returns how many got a 200 with a body.
func (l *fixedLoad) Run(ctx context.Context) (int, error) { return l.do(ctx, l.requests) }

func (l *fixedLoad) do(ctx context.Context, requests int) (int, error) {
	url := l.sc.URL(l.c)
	var next, ok atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range l.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(requests) && ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
				if err == nil {
					for _, h := range l.sc.Headers {
						k, v, _ := strings.Cut(h, ":")
						req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
					}
					var resp *http.Response
					if resp, err = l.client.Do(req); err == nil {
						n, _ := io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
						if resp.StatusCode != http.StatusOK || n == 0 {
							err = fmt.Errorf("status %s, %d bytes", resp.Status, n)
						}
					}
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("syscall pass, scenario %s: GET %s: %w", l.sc.Name, url, err)
					}
					mu.Unlock()
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return int(ok.Load()), firstErr
	}
	if err := ctx.Err(); err != nil {
		return int(ok.Load()), fmt.Errorf("syscall pass, scenario %s: %w after %d of %d requests", l.sc.Name, err, ok.Load(), requests)
	}
	return int(ok.Load()), nil
}

// syscallRequests is how many requests the syscall pass makes for a scenario: n, but few
// enough for the large file that the pass moves at most about 200 MiB.
func syscallRequests(sc Scenario, n int) int {
	if sc.Path == LargeFile {
		return max(10, min(n, 20))
	}
	return n
}
