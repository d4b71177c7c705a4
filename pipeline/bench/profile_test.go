package bench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func directives(ds []Directive) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String() + "\n")
	}
	return b.String()
}

func TestDebianDefaultProfile(t *testing.T) {
	p, err := DebianDefaultProfile()
	if err != nil {
		t.Fatal(err)
	}
	http := directives(p.HTTP)
	for _, want := range []string{"sendfile on;", "tcp_nopush on;", "gzip on;", "access_log /var/log/nginx/access.log;", "ssl_prefer_server_ciphers on;"} {
		if !strings.Contains(http, want) {
			t.Errorf("http directives lack %q:\n%s", want, http)
		}
	}
	for _, not := range []string{"include", "gzip_types", "ssl_session_cache", "open_file_cache", "error_log", "default_type"} {
		if strings.Contains(http+directives(p.Main), not) {
			t.Errorf("directives have %q:\n%s", not, http)
		}
	}
	if p.WorkerProcesses != "auto" || directives(p.Events) != "worker_connections 768;\n" || len(p.Main) != 0 {
		t.Errorf("main %v, worker_processes %q, events %v", p.Main, p.WorkerProcesses, p.Events)
	}
}

func shippedProfile(t *testing.T) *Profile {
	t.Helper()
	conf := filepath.Join(testenv.RepoRoot(), "pipeline", "plan", "files", "nginx.conf")
	// No includes: they add brotli and zstd directives, and Debian's nginx, which the tests
	// run, has neither module.
	p, err := ReadProfile("shipped", conf, "")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestShippedProfile(t *testing.T) {
	p := shippedProfile(t)
	http := directives(p.HTTP)
	for _, want := range []string{"access_log /dev/stdout main buffer=4k flush=1s;", "log_format main '$remote_addr", "open_file_cache max=1024 inactive=10s;", "gzip_types text/plain", "ssl_session_cache shared:SSL:10m;"} {
		if !strings.Contains(http, want) {
			t.Errorf("http directives lack %q:\n%s", want, http)
		}
	}
	// The health check's access_log off is inside a server block: not an http directive.
	if strings.Contains(http, "access_log off") || strings.Contains(http, "listen") || strings.Contains(http, "_temp_path") {
		t.Errorf("server-block or frame directives leaked:\n%s", http)
	}
	if p.WorkerProcesses != "auto" || !strings.Contains(directives(p.Main), "worker_rlimit_nofile") {
		t.Errorf("main: %q %v", p.WorkerProcesses, p.Main)
	}
}

func TestParseConf(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "extra.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	// An include from the config directory (as /etc/nginx/...) is expanded in its context.
	if err := os.WriteFile(filepath.Join(dir, "extra.d", "a.conf"), []byte("gzip_comp_level 3; server { listen 1; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := `worker_processes 2; # comment; with { braces }
events { worker_connections 10; }
http {
    log_format x '"$request" # not a comment; {}'
                 "$status";
    include /etc/nginx/extra.d/*.conf;
    include /somewhere/else/*.conf;
    types { text/html html; }
    server { location / { access_log off; } }
    access_log /var/log/x.log x buffer=4k;
}
stream { server { listen 2; } }
`
	p, err := parseProfile("t", "t.conf", []byte(conf), dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "log_format x '\"$request\" # not a comment; {}' \"$status\";\ngzip_comp_level 3;\naccess_log /var/log/x.log x buffer=4k;\n"
	if got := directives(p.HTTP); got != want || p.WorkerProcesses != "2" {
		t.Errorf("http directives:\n%s\nwant:\n%s", got, want)
	}
	if got := accessLogPath("/var/log/x.log", "/p"); got != "/p/logs/x.log" {
		t.Errorf("accessLogPath = %s", got)
	}
	for _, arg := range []string{"/dev/stdout", "off", "syslog:server=127.0.0.1"} {
		if got := accessLogPath(arg, "/p"); got != arg {
			t.Errorf("accessLogPath(%s) = %s", arg, got)
		}
	}
	for _, bad := range []string{"http { gzip on; ", "gzip on", "}", "x '", "; "} {
		if _, err := parseProfile("t", "t.conf", []byte(bad), ""); err == nil {
			t.Errorf("ParseProfile(%q) accepted it", bad)
		}
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
	for _, want := range []string{"out of the box", "syscalls/request", "peak RSS per worker", "gzip: shipped gzip", "debian identity", "| http-keepalive | shipped |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
