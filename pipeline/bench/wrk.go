package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// WrkResult is what one wrk run reports (with --latency).
type WrkResult struct {
	Requests    int64         `json:"requests"`
	Duration    time.Duration `json:"duration_ns"`
	RequestsSec float64       `json:"requests_per_sec"`
	// Latency percentiles from wrk's "Latency Distribution" (wrk's HdrHistogram, 1 µs resolution).
	P50 time.Duration `json:"p50_ns"`
	P75 time.Duration `json:"p75_ns"`
	P90 time.Duration `json:"p90_ns"`
	P99 time.Duration `json:"p99_ns"`
	// BytesRead is wrk's "N requests in T, X read" figure (rounded as wrk prints it).
	BytesRead float64 `json:"bytes_read"`
	// Socket errors and non-2xx/3xx responses; a healthy run has none.
	ErrConnect, ErrRead, ErrWrite, ErrTimeout int64
	Non2xx3xx                                 int64 `json:"non_2xx_3xx"`
}

// Errors is the total of socket errors.
func (r WrkResult) Errors() int64 { return r.ErrConnect + r.ErrRead + r.ErrWrite + r.ErrTimeout }

// parseWrk reads wrk's text output. It needs the summary line and Requests/sec, and the
// latency distribution (run wrk with --latency); anything else missing is an error that quotes
// the output, because a silently zero latency would be a fast-looking lie.
func parseWrk(out []byte) (WrkResult, error) {
	var r WrkResult
	var haveSummary, haveRPS, haveDist bool
	inDist := false
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case line == "Latency Distribution":
			inDist = true
		case inDist && len(f) == 2 && strings.HasSuffix(f[0], "%"):
			d, err := parseWrkDuration(f[1])
			if err != nil {
				return r, fmt.Errorf("parsing wrk latency line %q: %w", line, err)
			}
			if r.setPercentile(f[0], d) {
				haveDist = true
			}
		case len(f) >= 6 && f[1] == "requests" && f[2] == "in" && f[len(f)-1] == "read":
			inDist = false
			if err := r.parseSummary(f); err != nil {
				return r, fmt.Errorf("parsing wrk summary %q: %w", line, err)
			}
			haveSummary = true
		case strings.HasPrefix(line, "Socket errors:"):
			if err := r.parseSocketErrors(strings.TrimPrefix(line, "Socket errors:")); err != nil {
				return r, fmt.Errorf("parsing wrk socket errors %q: %w", line, err)
			}
		case strings.HasPrefix(line, "Non-2xx or 3xx responses:"):
			n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(line, "Non-2xx or 3xx responses:")), 10, 64)
			if err != nil {
				return r, fmt.Errorf("parsing wrk line %q: %w", line, err)
			}
			r.Non2xx3xx = n
		case strings.HasPrefix(line, "Requests/sec:"):
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimPrefix(line, "Requests/sec:")), 64)
			if err != nil {
				return r, fmt.Errorf("parsing wrk line %q: %w", line, err)
			}
			r.RequestsSec, haveRPS = v, true
		}
	}
	switch {
	case !haveSummary:
		return r, fmt.Errorf("wrk output has no \"N requests in T, X read\" line:\n%s", out)
	case !haveRPS:
		return r, fmt.Errorf("wrk output has no Requests/sec line:\n%s", out)
	case !haveDist:
		return r, fmt.Errorf("wrk output has no latency distribution (was --latency given?):\n%s", out)
	}
	return r, nil
}

// setPercentile records the latency of one line of the distribution ("50%"); it reports
// whether that was the median, the one line a distribution must have.
func (r *WrkResult) setPercentile(pct string, d time.Duration) bool {
	switch pct {
	case "50%":
		r.P50 = d
		return true
	case "75%":
		r.P75 = d
	case "90%":
		r.P90 = d
	case "99%":
		r.P99 = d
	}
	return false
}

// parseSummary reads the fields of "120000 requests in 3.00s, 100.00MB read".
func (r *WrkResult) parseSummary(f []string) error {
	n, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return err
	}
	d, err := parseWrkDuration(strings.TrimSuffix(f[3], ","))
	if err != nil {
		return err
	}
	b, err := parseWrkBytes(f[4])
	if err != nil {
		return err
	}
	r.Requests, r.Duration, r.BytesRead = n, d, b
	return nil
}

// parseSocketErrors reads what follows "Socket errors:" ("connect 0, read 12, write 0,
// timeout 3").
func (r *WrkResult) parseSocketErrors(list string) error {
	for _, kv := range strings.Split(list, ",") {
		p := strings.Fields(kv)
		if len(p) != 2 {
			return fmt.Errorf("%q is not a name and a count", strings.TrimSpace(kv))
		}
		n, err := strconv.ParseInt(p[1], 10, 64)
		if err != nil {
			return err
		}
		switch p[0] {
		case "connect":
			r.ErrConnect = n
		case "read":
			r.ErrRead = n
		case "write":
			r.ErrWrite = n
		case "timeout":
			r.ErrTimeout = n
		}
	}
	return nil
}

// parseWrkDuration reads wrk's time format: a number with one of the units us, ms, s, m, h
// ("213.45us", "1.02ms", "2.00s", "1.50m").
func parseWrkDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"m", time.Minute}, {"h", time.Hour}, {"s", time.Second}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			// "ms" must not be read as "m" with a trailing "s": the list tries "ms" before "m"
			// and "s" last, and a number never ends in a letter.
			v, err := strconv.ParseFloat(num, 64)
			if err != nil {
				continue
			}
			return time.Duration(v * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("unknown wrk duration %q (want a number with us, ms, s, m or h)", s)
}

// parseWrkBytes reads wrk's binary size format: "512.00B", "1.50KB", "100.00MB", "1.12GB".
func parseWrkBytes(s string) (float64, error) {
	num, ok := strings.CutSuffix(s, "B")
	if !ok {
		return 0, fmt.Errorf("unknown wrk size %q (want a number with B, KB, MB, GB, TB or PB)", s)
	}
	mult := 1.0
	for i, p := range []string{"K", "M", "G", "T", "P"} {
		if n, ok := strings.CutSuffix(num, p); ok {
			num = n
			mult = float64(uint64(1) << (10 * (i + 1)))
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("unknown wrk size %q: %w", s, err)
	}
	return v * mult, nil
}

// parseWrkMetric reads wrk's decimal metric format used for Req/Sec: "950.00", "89.12k", "1.20M".
func parseWrkMetric(s string) (float64, error) {
	mult := 1.0
	for _, p := range []struct {
		s string
		m float64
	}{{"k", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}} {
		if n, ok := strings.CutSuffix(s, p.s); ok {
			s, mult = n, p.m
			break
		}
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("unknown wrk metric %q: %w", s, err)
	}
	return v * mult, nil
}

// wrkCommand describes one load run.
type wrkCommand struct {
	Wrk         string // the wrk binary ("wrk" from PATH if empty)
	URL         string
	Duration    time.Duration
	Connections int
	Threads     int
	Headers     []string // "Name: value"
	Timeout     time.Duration
	Script      string // optional Lua script path (-s)
	// CPUs pins wrk to these CPUs (through taskset) when not empty.
	CPUs []int
}

// Args is the command line for r (without pinning).
func (r wrkCommand) Args() []string {
	wrk := r.Wrk
	if wrk == "" {
		wrk = "wrk"
	}
	threads := max(r.Threads, 1)
	conns := max(r.Connections, threads)
	args := []string{wrk, "--latency",
		"-t", strconv.Itoa(threads), "-c", strconv.Itoa(conns),
		"-d", fmt.Sprintf("%ds", max(int((r.Duration+time.Second-1)/time.Second), 1))}
	if r.Timeout > 0 {
		// wrk takes whole time units only ("2s"), not "1500ms".
		args = append(args, "--timeout", fmt.Sprintf("%ds", max(int(r.Timeout/time.Second), 1)))
	}
	for _, h := range r.Headers {
		args = append(args, "-H", h)
	}
	if r.Script != "" {
		args = append(args, "-s", r.Script)
	}
	return append(args, r.URL)
}

// Run runs wrk and parses its output. The run is bounded: wrk is killed 30 s after its
// duration should have ended.
func (r wrkCommand) Run(ctx context.Context) (WrkResult, []byte, error) {
	args := pinned(r.CPUs, r.Args())
	ctx, cancel := context.WithTimeout(ctx, r.Duration+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return WrkResult{}, out, fmt.Errorf("running %s: %w\n%s%s", strings.Join(args, " "), err, out, stderr.Bytes())
	}
	res, err := parseWrk(out)
	return res, out, err
}

// pinned prefixes a command with taskset when cpus is not empty.
func pinned(cpus []int, args []string) []string {
	if len(cpus) == 0 {
		return args
	}
	return append([]string{"taskset", "-c", cpuList(cpus)}, args...)
}

func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}
