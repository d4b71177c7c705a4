package bench

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// Output of Debian's wrk 4.1.0 with --latency, with the units it prints at both ends.
const wrkMicros = `Running 3s test @ http://127.0.0.1:8080/small.html
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   876.54us  210.32us  12.01ms   93.12%
    Req/Sec    71.23k     3.45k   75.10k    80.00%
  Latency Distribution
     50%  812.00us
     75%    0.93ms
     90%    1.07ms
     99%    1.63ms
  213690 requests in 3.00s, 245.20MB read
Requests/sec:  71229.87
Transfer/sec:     81.73MB
`

const wrkSlow = `Running 1m test @ https://127.0.0.1:8443/large.bin
  2 threads and 1000 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.52s   402.11ms   2.00m    70.01%
    Req/Sec     1.20M   512.00k    2.10M    66.67%
  Latency Distribution
     50%    1.50s 
     75%    1.80s 
     90%    1.95s 
     99%    1.20m 
  7512 requests in 1.00m, 1.12GB read
  Socket errors: connect 12, read 3, write 0, timeout 250
  Non-2xx or 3xx responses: 7
Requests/sec:    125.19
Transfer/sec:     19.11MB
`

func TestParseWrk(t *testing.T) {
	r, err := parseWrk([]byte(wrkMicros))
	if err != nil {
		t.Fatal(err)
	}
	want := WrkResult{Requests: 213690, Duration: 3 * time.Second, RequestsSec: 71229.87,
		P50: 812 * time.Microsecond, P75: 930 * time.Microsecond, P90: 1070 * time.Microsecond, P99: 1630 * time.Microsecond,
		BytesRead: 245.20 * (1 << 20)}
	if !approx(r.BytesRead, want.BytesRead) {
		t.Errorf("BytesRead = %v, want %v", r.BytesRead, want.BytesRead)
	}
	r.BytesRead = want.BytesRead
	if r != want {
		t.Errorf("ParseWrk =\n%+v\nwant\n%+v", r, want)
	}

	r, err = parseWrk([]byte(wrkSlow))
	if err != nil {
		t.Fatal(err)
	}
	if r.Requests != 7512 || r.Duration != time.Minute || r.P50 != 1500*time.Millisecond || r.P99 != 72*time.Second ||
		r.ErrConnect != 12 || r.ErrRead != 3 || r.ErrTimeout != 250 || r.Non2xx3xx != 7 || r.Errors() != 265 || r.RequestsSec != 125.19 {
		t.Errorf("ParseWrk(slow) = %+v", r)
	}
	if !approx(r.BytesRead, 1.12*(1<<30)) {
		t.Errorf("BytesRead = %v", r.BytesRead)
	}
}

func TestParseWrkRejectsIncompleteOutput(t *testing.T) {
	noDist := regexp.MustCompile(`(?s)  Latency Distribution.*?99%[^\n]*\n`).ReplaceAllString(wrkMicros, "")
	for name, out := range map[string]string{
		"no latency distribution": noDist,
		"no summary":              strings.Replace(wrkMicros, "213690 requests in 3.00s, 245.20MB read", "", 1),
		"no requests/sec":         strings.Replace(wrkMicros, "Requests/sec:  71229.87", "", 1),
		"bad unit":                strings.Replace(wrkMicros, "812.00us", "812.00ns", 1),
		"connection refused":      "unable to connect to 127.0.0.1:1 Connection refused\n",
	} {
		if _, err := parseWrk([]byte(out)); err == nil {
			t.Errorf("%s: ParseWrk accepted it", name)
		}
	}
}

func TestParseWrkUnits(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"0.00us": 0, "213.45us": 213450 * time.Nanosecond, "1.02ms": 1020 * time.Microsecond,
		"2.00s": 2 * time.Second, "1.50m": 90 * time.Second, "1.00h": time.Hour,
	} {
		got, err := parseWrkDuration(s)
		if err != nil || got != want {
			t.Errorf("ParseWrkDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"", "us", "1.0", "3ns", "1,5ms"} {
		if _, err := parseWrkDuration(bad); err == nil {
			t.Errorf("ParseWrkDuration(%q) accepted", bad)
		}
	}
	for s, want := range map[string]float64{
		"512.00B": 512, "1.50KB": 1536, "100.00MB": 100 << 20, "1.12GB": 1.12 * (1 << 30), "2.00TB": 2 << 40,
	} {
		got, err := parseWrkBytes(s)
		if err != nil || !approx(got, want) {
			t.Errorf("ParseWrkBytes(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	if _, err := parseWrkBytes("12MiB"); err == nil {
		t.Error("ParseWrkBytes(12MiB) accepted")
	}
	for s, want := range map[string]float64{"950.00": 950, "89.12k": 89120, "1.20M": 1.2e6, "3.00G": 3e9} {
		got, err := parseWrkMetric(s)
		if err != nil || !approx(got, want) {
			t.Errorf("ParseWrkMetric(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
}

func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b)) }

// exactScript makes wrk print, after its own report, the same figures unrounded from its
// Lua API; the test checks the parsed text against them.
const exactScript = `
done = function(summary, latency, requests)
  io.write(string.format("EXACT requests=%d duration_us=%d p50_us=%d p99_us=%d status=%d connect=%d read=%d\n",
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    summary.errors.status, summary.errors.connect, summary.errors.read))
end
`

// TestWrkAgainstRealNginx runs Debian's wrk against Debian's nginx on loopback and checks
// that what parseWrk reads from the text equals what wrk's Lua API reports exactly.
func TestWrkAgainstRealNginx(t *testing.T) {
	wrk := testenv.Tool(t, "wrk", "wrk")
	nginx := testenv.Tool(t, "nginx", "nginx-light (or nginx)")
	srv := startTestServer(t, nginx, DefaultKnobs())
	script := filepath.Join(t.TempDir(), "exact.lua")
	if err := os.WriteFile(script, []byte(exactScript), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, url string
		headers   []string
		non2xx    bool
	}{
		{"http small", fmt.Sprintf("http://127.0.0.1:%d/%s", srv.Config.HTTPPort, SmallFile), nil, false},
		{"tls large", fmt.Sprintf("https://127.0.0.1:%d/%s", srv.Config.HTTPSPort, LargeFile), nil, false},
		{"tls handshake", fmt.Sprintf("https://127.0.0.1:%d/%s", srv.Config.HTTPSPort, SmallFile), []string{"Connection: close"}, false},
		{"404", fmt.Sprintf("http://127.0.0.1:%d/missing", srv.Config.HTTPPort), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := wrkCommand{Wrk: wrk, URL: tc.url, Duration: time.Second, Connections: 4, Threads: 1, Headers: tc.headers, Script: script}
			res, out, err := run.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			m := regexp.MustCompile(`EXACT requests=(\d+) duration_us=(\d+) p50_us=(\d+) p99_us=(\d+) status=(\d+) connect=(\d+) read=(\d+)`).FindStringSubmatch(string(out))
			if m == nil {
				t.Fatalf("no EXACT line from the Lua script in:\n%s", out)
			}
			n := func(i int) int64 { v, _ := strconv.ParseInt(m[i], 10, 64); return v }
			if res.Requests != n(1) || res.Requests == 0 {
				t.Errorf("requests: parsed %d, exact %d", res.Requests, n(1))
			}
			within := func(what string, parsed time.Duration, exactUS int64) {
				exact := time.Duration(exactUS) * time.Microsecond
				// wrk prints 2 decimals in the largest fitting unit: at most 0.5% off, or 5 µs.
				if diff := (parsed - exact).Abs(); diff > exact/200+5*time.Microsecond {
					t.Errorf("%s: parsed %v, exact %v\n%s", what, parsed, exact, out)
				}
			}
			within("duration", res.Duration, n(2))
			within("p50", res.P50, n(3))
			within("p99", res.P99, n(4))
			if got := float64(res.Requests) / res.Duration.Seconds(); math.Abs(got-res.RequestsSec) > 0.02*res.RequestsSec {
				t.Errorf("Requests/sec %v disagrees with requests/duration %v", res.RequestsSec, got)
			}
			if res.Non2xx3xx != n(5) || (res.Non2xx3xx > 0) != tc.non2xx {
				t.Errorf("non-2xx/3xx: parsed %d, exact %d (expected some: %v)", res.Non2xx3xx, n(5), tc.non2xx)
			}
			if res.ErrConnect != n(6) || res.ErrRead != n(7) {
				t.Errorf("socket errors: parsed connect %d read %d, exact %s %s", res.ErrConnect, res.ErrRead, m[6], m[7])
			}
		})
	}
}

// startTestServer runs bin with the benchmark's config and content for the test's lifetime.
func startTestServer(t *testing.T, bin string, k Knobs) *server {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir's directories are 0700; workers running as nobody must reach the content.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	content := filepath.Join(dir, "content")
	if err := writeContent(content); err != nil {
		t.Fatal(err)
	}
	info, err := probe(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	ports, err := toolbox.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	usr, grp, err := workerUser()
	if err != nil {
		t.Fatal(err)
	}
	c := Config{Knobs: k, Prefix: filepath.Join(dir, "server"), Content: content, HTTPPort: ports[0], HTTPSPort: ports[1], FullHandshakePort: ports[2],
		User: usr, Group: grp, TempPaths: info.TempPaths()}
	s, err := startServer(context.Background(), "test", info.Path, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	return s
}
