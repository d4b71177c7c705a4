package bench

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
