package bench

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
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
