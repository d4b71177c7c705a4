//go:build integration

package bench

import (
	"bytes"
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

// These tests drive Debian's nginx with wrk and strace (.ci/install-deps installs them): the
// integration tier, like run_test.go's builds.

// TestVariantsAreAcceptedByNginx renders every variant and has the real nginx check it.
func TestVariantsAreAcceptedByNginx(t *testing.T) {
	base := DefaultKnobs()
	vs := Variants(base, 1)
	if len(vs) < 7 {
		t.Fatalf("only %d variants", len(vs))
	}
	names := map[string]bool{}
	for _, v := range vs {
		k := base
		v.Apply(&k)
		if k == base {
			t.Errorf("variant %q changes nothing", v.Name)
		}
		if names[v.Name] {
			t.Errorf("two variants named %q", v.Name)
		}
		names[v.Name] = true
	}
	// Turning each knob the other way gives variants too.
	flipped := base
	for _, v := range vs {
		v.Apply(&flipped)
	}
	if back := Variants(flipped, 1); len(back) < 7 {
		t.Errorf("from the tuned knobs, only %d variants", len(back))
	}
	nginx := testenvTool(t)
	for _, v := range vs {
		k := base
		v.Apply(&k)
		s := startTestServer(t, nginx, k)
		if err := s.Stop(); err != nil {
			t.Errorf("variant %q: %v", v.Name, err)
		}
	}
}

func TestProbe(t *testing.T) {
	nginx := testenvTool(t)
	info, err := probe(context.Background(), nginx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Version == "" || !strings.Contains(info.OpenSSL, "OpenSSL") || len(info.TempPaths()) < 2 {
		t.Errorf("Probe(%s) = %+v", nginx, info)
	}
	if _, err := probe(context.Background(), "/bin/true"); err == nil || !strings.Contains(err.Error(), "does not print an nginx version") {
		t.Errorf("Probe(/bin/true) = %v", err)
	}
	if _, err := probe(context.Background(), "/nonexistent/nginx"); err == nil || !strings.Contains(err.Error(), "/nonexistent/nginx") {
		t.Errorf("Probe(missing) = %v", err)
	}
}

func startProfileServer(t *testing.T, bin string, p *Profile) *server {
	t.Helper()
	dir := t.TempDir()
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
	k := DefaultKnobs()
	k.WorkerProcesses = "1"
	c := Config{Knobs: k, Prefix: filepath.Join(dir, "server"), Content: content, HTTPPort: ports[0], HTTPSPort: ports[1], FullHandshakePort: ports[2],
		User: usr, Group: grp, TempPaths: info.TempPaths(), Profile: p}
	s, err := startServer(context.Background(), "test", info.Path, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

// TestProfilesServe renders Debian's default and the shipped config, has Debian's nginx run
// each, and checks every scenario as served: Debian's config does not gzip JSON, the
// shipped one does, and Debian's access log lands under the prefix.
func TestProfilesServe(t *testing.T) {
	nginx := testenvTool(t)
	deb, err := DebianDefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p       *Profile
		gzipEnc string
	}{{deb, "identity"}, {shippedProfile(t), "gzip"}} {
		s := startProfileServer(t, nginx, tc.p)
		for _, sc := range Scenarios {
			if sc.EqualBytes {
				continue // like for like only: a profile's own config has no /gzN/ locations (likeForLikeOnly)
			}
			enc, size, err := checkAsServed(sc, s.Config)
			if err != nil {
				t.Errorf("%s: %v", tc.p.Name, err)
				continue
			}
			if sc.Path == JSONFile && enc != tc.gzipEnc {
				t.Errorf("%s: %s served %s, want %s", tc.p.Name, sc.Name, enc, tc.gzipEnc)
			}
			if size <= 0 {
				t.Errorf("%s: %s: %d bytes", tc.p.Name, sc.Name, size)
			}
		}
		conf, _ := os.ReadFile(filepath.Join(s.Config.Prefix, "conf", "nginx.conf"))
		if !bytes.Contains(conf, []byte("worker_processes 1;")) || bytes.Contains(conf, []byte("include")) {
			t.Errorf("%s rendered:\n%s", tc.p.Name, conf)
		}
	}
	s := startProfileServer(t, nginx, deb)
	sc, _ := SelectScenarios("http-keepalive")
	if _, _, err := checkAsServed(sc[0], s.Config); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(s.Config.Prefix, "logs", "access.log")); err != nil || !bytes.Contains(b, []byte("GET /static.html")) {
		t.Errorf("Debian profile's access log: %q, %v", b, err)
	}
	truncateLogs(s.Config.Prefix)
	if fi, err := os.Stat(filepath.Join(s.Config.Prefix, "logs", "access.log")); err != nil || fi.Size() != 0 {
		t.Errorf("access.log after truncateLogs: %v, %v", fi, err)
	}
}

// TestRunOutOfBox is ci bench's out-of-box section in small: Debian's nginx with the shipped
// config against itself with Debian's, with the syscall pass and memory in the report.
func TestRunOutOfBox(t *testing.T) {
	nginx := testenvTool(t)
	testenv.Tool(t, "strace", "strace")
	deb, err := DebianDefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := SelectScenarios("http-keepalive,gzip")
	rep, err := Run(context.Background(), []Target{{Name: "shipped", Binary: nginx, Knobs: DefaultKnobs(), Profile: shippedProfile(t)},
		{Name: "debian", Binary: nginx, Knobs: DefaultKnobs(), Profile: deb}}, 1,
		Options{Scenarios: sc, Duration: 2 * time.Second, Rounds: 1, Warmup: -1, SyscallRequests: 200})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != ModeOutOfBox || rep.SyscallRequests != 200 {
		t.Errorf("mode %q, syscall requests %d", rep.Mode, rep.SyscallRequests)
	}
	for _, s := range rep.Scenarios {
		if len(s.Syscalls) != 2 || s.Syscalls[0].Target != "shipped" || s.Syscalls[1].Requests != 200 || s.Syscalls[0].PerRequest <= 1 {
			t.Errorf("%s syscalls: %+v", s.Name, s.Syscalls)
		}
		for _, r := range s.Results {
			if r.ContentEncoding == "" || r.BodyBytes <= 0 || r.Runs[0].WorkerPeakRSS <= 0 {
				t.Errorf("%s/%s: encoding %q, %d bytes, peak RSS %d", s.Name, r.Target, r.ContentEncoding, r.BodyBytes, r.Runs[0].WorkerPeakRSS)
			}
			// Serving a static page over kept-alive connections is mostly the kernel's work
			// (reads, writes, the TCP stack): a split that put it all in user time, or none,
			// would be wrong. Generous bounds: the share depends on the kernel and the CPU.
			if r.SystemShare.N != 1 || r.Runs[0].ServerSystemCPU > r.Runs[0].ServerCPU ||
				(s.Name == "http-keepalive" && (r.SystemShare.Median < 0.1 || r.SystemShare.Median > 0.99)) {
				t.Errorf("%s/%s: system share %+v, system %v of %v", s.Name, r.Target, r.SystemShare, r.Runs[0].ServerSystemCPU, r.Runs[0].ServerCPU)
			}
		}
	}
	if g := rep.Scenarios[1]; g.Results[0].ContentEncoding != "gzip" || g.Results[1].ContentEncoding != "identity" {
		t.Errorf("gzip as served: %+v", g.Results)
	}
	// The shipped config logs every request to stdout (one write each); Debian's to a file.
	if c := rep.Scenarios[0].Syscalls[0]; !strings.Contains(c.Top(10), "write ") {
		t.Errorf("shipped config's syscalls lack the access log's write: %s", c.Top(10))
	}
	for _, ti := range rep.Targets {
		if ti.Profile == nil || ti.Memory == nil || ti.Memory.MaxWorkerPeakRSS <= 0 {
			t.Errorf("target %s: profile %v, memory %+v", ti.Name, ti.Profile != nil, ti.Memory)
		}
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"out of the box", "syscalls/request", "peak RSS per worker", "gzip: shipped gzip", "debian identity", "| http-keepalive | shipped |", "in the kernel"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestReadServerMemory reads the memory of a real nginx master and its workers.
func TestReadServerMemory(t *testing.T) {
	nginx := testenvTool(t)
	k := DefaultKnobs()
	k.WorkerProcesses = "2"
	s := startTestServer(t, nginx, k)
	// The master forks its workers after it starts listening: wait (bounded) until both exist.
	var m ServerMemory
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if m, err = readServerMemory(s.PID()); err != nil {
			t.Fatal(err)
		}
		if len(m.Workers) >= 2 || time.Now().After(deadline) {
			break
		}
	}
	if m.Master.PID != s.PID() || m.Master.PeakRSS <= 0 || len(m.Workers) != 2 {
		t.Fatalf("ReadServerMemory = %+v", m)
	}
	for _, w := range m.Workers {
		if w.PeakRSS <= 0 || w.PeakRSS < w.RSS || w.PeakRSS > m.MaxWorkerPeakRSS {
			t.Errorf("worker %+v (max %d)", w, m.MaxWorkerPeakRSS)
		}
	}
}

// TestTraceSyscallsDebianNginx counts, for real, the system calls of Debian's nginx worker
// over a fixed number of keep-alive requests on loopback.
func TestTraceSyscallsDebianNginx(t *testing.T) {
	nginx := testenvTool(t)
	strace := testenv.Tool(t, "strace", "strace")
	k := DefaultKnobs()
	k.WorkerProcesses = "1"
	s := startTestServer(t, nginx, k)
	pids, err := Workers(s.PID())
	if err != nil || len(pids) != 1 {
		t.Fatalf("workers of %d: %v, %v", s.PID(), pids, err)
	}
	sc, _ := SelectScenarios("http-keepalive")
	const n, conns = 300, 4
	load := newFixedLoad(sc[0], s.Config, n, conns)
	defer load.Close()
	c, err := traceSyscalls(context.Background(), strace, pids, time.Minute, load.Warm, load.Run)
	if err != nil {
		t.Fatal(err)
	}
	if c.Requests != n || c.Total < 3*n || c.PerRequest != float64(c.Total)/n {
		t.Errorf("count %+v", c)
	}
	got := map[string]float64{}
	calls := map[string]int64{}
	for _, s := range c.Calls {
		got[s.Name] = s.PerRequest
		calls[s.Name] = s.Calls
	}
	// No open_file_cache in DefaultKnobs: open, stat, close of the file per request; sendfile
	// for the body.
	for _, name := range []string{"openat", "sendfile", "close"} {
		if got[name] < 0.9 {
			t.Errorf("%s: %.2f per request, want about 1 (calls: %s)", name, got[name], c.Top(10))
		}
	}
	// Warmed keep-alive connections: no new connection per request. The tolerance is one
	// accept per connection of the load (4): Go's client may redial a kept-alive connection
	// it found closed or busy, which is the client's event, not a cost of the server's
	// keep-alive. A server that accepted per request would show about 300.
	if calls["accept4"] > conns {
		t.Errorf("accept4 called %d times for %d kept-alive requests on %d connections, want at most %d (calls: %s)", calls["accept4"], n, conns, conns, c.Top(10))
	}
	if tracer, _ := tracerPID(pids[0]); tracer != 0 {
		t.Errorf("worker still traced by %d after the pass", tracer)
	}
	// The server keeps serving after strace detached.
	if err := sc[0].Check(s.Config); err != nil {
		t.Error(err)
	}
	t.Logf("%.2f syscalls/request: %s", c.PerRequest, c.Top(8))

	// A missing strace is an error that says what to do.
	if _, err := traceSyscalls(context.Background(), "/nonexistent/strace", pids, time.Minute, nil, load.Run); err == nil || !strings.Contains(err.Error(), "strace") {
		t.Errorf("missing strace: %v", err)
	}
}

// TestTuneSweep runs a real, short sweep with Debian's nginx: every variant is measured
// against the baseline and gets a verdict, and the best combination is consistent with them.
func TestTuneSweep(t *testing.T) {
	nginx := testenvTool(t)
	sc, _ := SelectScenarios("http-keepalive")
	base := DefaultKnobs()
	testenv.Tool(t, "strace", "strace")
	tr, err := Tune(context.Background(), nginx, base, Options{Scenarios: sc, Duration: time.Second, Rounds: minRounds, Warmup: -1, SyscallRequests: 100})
	if err != nil {
		t.Fatal(err)
	}
	if want := len(Variants(base, len(mustServerCPUs(t)))); len(tr.Knobs) != want || len(tr.Sweep.Targets) != want+2 {
		t.Fatalf("%d knob results and %d targets for %d variants", len(tr.Knobs), len(tr.Sweep.Targets), want)
	}
	byName := map[string]KnobResult{}
	for _, kr := range tr.Knobs {
		byName[kr.Variant] = kr
		if len(kr.Scenarios) != 1 || kr.Scenarios[0].Verdict == "" || kr.Score <= 0 || kr.Scenarios[0].Syscalls <= 0 || kr.Scenarios[0].BaselineSyscalls <= 0 {
			t.Errorf("variant %s: %+v", kr.Variant, kr)
		}
	}
	for _, name := range tr.Best {
		if kr := byName[name]; kr.Better == 0 || kr.Worse > 0 {
			t.Errorf("best combination includes %s, which was not better: %+v", name, kr)
		}
	}
	if (len(tr.Best) == 0) != (tr.Confirm == nil) {
		t.Errorf("best %v but confirmation run %v", tr.Best, tr.Confirm != nil)
	}
	if len(tr.Best) == 0 && tr.BestKnobs != base {
		t.Errorf("no winners, yet the best knobs differ from the baseline: %+v", tr.BestKnobs)
	}
	var out bytes.Buffer
	if err := tr.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if err := tr.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "syscalls/request") {
		t.Error("output lacks syscalls/request")
	}
	for _, kr := range tr.Knobs {
		if !strings.Contains(out.String(), kr.Variant) {
			t.Errorf("output lacks variant %s", kr.Variant)
		}
	}
	t.Logf("\n%s", out.String())
}

func mustServerCPUs(t *testing.T) []int {
	s, _, err := cpuSplit()
	if err != nil {
		t.Fatal(err)
	}
	if len(s) == 0 {
		return []int{0}
	}
	return s
}

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
// that what ParseWrk reads from the text equals what wrk's Lua API reports exactly.
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

// Like for like, the gzip scenario's report gives each server's bytes per response: the
// same nginx at gzip level 1 and level 9 (knob GzipCompLevel) sends gzip both times, level 9
// strictly fewer bytes, and the text report prints both sizes.
func TestRunReportsGzipBytesLikeForLike(t *testing.T) {
	nginx := testenvTool(t)
	sc, _ := SelectScenarios("http-keepalive,gzip")
	fast, best := DefaultKnobs(), DefaultKnobs()
	fast.GzipCompLevel, best.GzipCompLevel = 1, 9
	rep, err := Run(context.Background(), []Target{{Name: "level1", Binary: nginx, Knobs: fast}, {Name: "level9", Binary: nginx, Knobs: best}}, 0,
		Options{Scenarios: sc, Duration: time.Second, Rounds: 1, Warmup: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Mode != ModeLikeForLike {
		t.Fatalf("mode %q", rep.Mode)
	}
	if k := rep.Scenarios[0].Results[0]; k.ContentEncoding != "" || k.BodyBytes != 0 {
		t.Errorf("http-keepalive asks for no compression, yet reports %q, %d bytes", k.ContentEncoding, k.BodyBytes)
	}
	g := rep.Scenarios[1].Results
	if g[0].ContentEncoding != "gzip" || g[1].ContentEncoding != "gzip" || g[1].BodyBytes <= 0 || g[1].BodyBytes >= g[0].BodyBytes {
		t.Errorf("gzip as served: level 1 %q %d bytes, level 9 %q %d bytes", g[0].ContentEncoding, g[0].BodyBytes, g[1].ContentEncoding, g[1].BodyBytes)
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("level1 gzip, %d bytes; level9 gzip, %d bytes", g[0].BodyBytes, g[1].BodyBytes); !strings.Contains(out.String(), want) {
		t.Errorf("the report lacks %q:\n%s", want, out.String())
	}
}

// gzip-equal-bytes with real servers: the probe fetches every level from each, both
// servers (the same nginx) choose level 1, the rounds and the syscall pass load each at its
// chosen level's location, and the report names the levels and bytes. The sizes it logs
// are equalbytes_test.go's recorded debianZlib.
func TestGzipEqualBytesDebianAgainstItself(t *testing.T) {
	nginx := testenvTool(t)
	testenv.Tool(t, "strace", "strace")
	sc, _ := SelectScenarios("gzip,gzip-equal-bytes")
	k := DefaultKnobs()
	k.GzipCompLevel = 5 // the gzip scenario at the shipped level; the probe is independent of it
	rep, err := Run(context.Background(), []Target{{Name: "A", Binary: nginx, Knobs: k}, {Name: "B", Binary: nginx, Knobs: k}}, 1,
		Options{Scenarios: sc, Duration: time.Second, Rounds: 1, Warmup: -1, SyscallRequests: 20})
	if err != nil {
		t.Fatal(err)
	}
	gz, eq := rep.Scenarios[0], rep.Scenarios[1]
	if len(gz.GzipLevels) != 0 || len(eq.GzipLevels) != 2 {
		t.Fatalf("gzip levels: gzip %+v, gzip-equal-bytes %+v", gz.GzipLevels, eq.GzipLevels)
	}
	t.Logf("Debian's nginx, body bytes at gzip_comp_level 1..9: %v", eq.GzipLevels[1].Sizes)
	for i, g := range eq.GzipLevels {
		if g.Target != []string{"A", "B"}[i] || g.Level != 1 || !g.Fits || g.Bound != g.Sizes[0] || g.Bytes != g.Sizes[0] {
			t.Errorf("level choice %+v", g)
		}
		if len(g.Sizes) != 9 || g.Sizes[8] >= g.Sizes[0] || g.Sizes[4] >= g.Sizes[0] {
			t.Errorf("%s: sizes at levels 1..9 %v, want level 5 and 9 smaller than level 1", g.Target, g.Sizes)
		}
		r := eq.Results[i]
		if r.ContentEncoding != "gzip" || r.BodyBytes != g.Bytes || r.RequestsSec.Median <= 0 {
			t.Errorf("%s as served: %q %d bytes (chosen %d), %v requests/s", r.Target, r.ContentEncoding, r.BodyBytes, g.Bytes, r.RequestsSec.Median)
		}
		// The gzip scenario at level 5 sends level 5's bytes: the probe saw the same.
		if gz.Results[i].BodyBytes != g.Sizes[4] {
			t.Errorf("%s: gzip scenario at level 5 sent %d bytes, the probe's level 5 %d", r.Target, gz.Results[i].BodyBytes, g.Sizes[4])
		}
		if c := eq.Syscalls[i]; c.Requests != 20 {
			t.Errorf("%s: syscall pass %+v", r.Target, c)
		}
	}
	var out strings.Builder
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gzip-equal-bytes: each server at the lowest gzip_comp_level", fmt.Sprintf("gzip-equal-bytes: A gzip, %d bytes", eq.GzipLevels[0].Bytes)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the report lacks %q:\n%s", want, out.String())
		}
	}
}
