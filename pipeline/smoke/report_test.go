package smoke

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func TestTLSConfFromShippedNginxConf(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "pipeline", "plan", "files", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	with, err := TLSConf(conf, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"listen 8443 ssl", "listen 8443 quic reuseport", "http2 on;",
		"ssl_certificate     /etc/nginx/tls/tls.crt;", "ssl_certificate_key /etc/nginx/tls/tls.key;", "Alt-Svc"} {
		if !strings.Contains(string(with), want) {
			t.Errorf("tls.conf lacks %q:\n%s", want, with)
		}
	}
	if strings.Contains(string(with), "# server {") || strings.HasPrefix(string(with), "#") {
		t.Errorf("comment markers left in tls.conf:\n%s", with)
	}
	without, err := TLSConf(conf, false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(without), "listen 8443 quic") || strings.Contains(string(without), "Alt-Svc") ||
		strings.Contains(string(without), "HTTP/3") {
		t.Errorf("tls.conf without HTTP/3 still has QUIC lines:\n%s", without)
	}
	if !strings.Contains(string(without), "listen 8443 ssl") {
		t.Errorf("tls.conf without HTTP/3 lost its TLS listener:\n%s", without)
	}
	// The shipped nginx.conf includes what users mount, and never says daemon off.
	for _, want := range []string{"include /etc/nginx/tls/*.conf;", "include /etc/nginx/conf.d/*.conf;", "pid /run/nginx/nginx.pid;"} {
		if !strings.Contains(string(conf), want) {
			t.Errorf("nginx.conf lacks %q", want)
		}
	}
	for _, l := range strings.Split(string(conf), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "daemon") {
			t.Errorf("nginx.conf says %q: the entrypoint passes -g 'daemon off;', a duplicate is fatal", l)
		}
	}

	if _, err := TLSConf([]byte("http {}\n"), true); err == nil {
		t.Error("TLSConf of a config without the block: no error")
	}
}

func TestReportTable(t *testing.T) {
	rep := Report{Results: []Result{
		{Name: "short", Status: Pass, Detail: "fine"},
		{Name: "a much longer name", Status: Fail, Detail: "first line\nsecond line"},
		{Name: "skipped", Status: Skip, Detail: "why"},
	}}
	var sb strings.Builder
	if err := rep.Print(&sb); err != nil {
		t.Fatal(err)
	}
	out := sb.String()
	lines := strings.Split(out, "\n")
	// Columns line up: RESULT starts at the same offset on every row.
	col := strings.Index(lines[0], "RESULT")
	for _, l := range []string{lines[1], lines[2], lines[4]} {
		if len(l) <= col || !strings.Contains("PASS FAIL SKIP", l[col:col+4]) {
			t.Errorf("misaligned row %q (RESULT at %d)\n%s", l, col, out)
		}
	}
	if !strings.Contains(out, "second line") || !strings.Contains(out, "1 passed, 1 failed, 1 skipped") {
		t.Errorf("table:\n%s", out)
	}
	if err := rep.Err(); err == nil || !strings.Contains(err.Error(), "a much longer name") {
		t.Errorf("Err() = %v, want the failed check named", err)
	}
	if rep.OK() {
		t.Error("OK() with a failed check")
	}
}

func TestConfigureFlags(t *testing.T) {
	v := "nginx version: nginx/1.26.3\nbuilt with OpenSSL 3.5.7 1 Jul 2025\nTLS SNI support enabled\n" +
		"configure arguments: --prefix=/etc/nginx --with-threads --with-http_v3_module --without-mail_pop3_module --add-module=../ngx_brotli --with-cc-opt='-O2 -march=x86-64-v3' --with-ld-opt=-pie\n"
	got := strings.Join(configureFlags(v), " ")
	if got != "--add-module=../ngx_brotli --with-http_v3_module --with-threads" {
		t.Errorf("configureFlags = %q", got)
	}
	if submatch(reOpenSSL, v) != "3.5.7" || submatch(reNginxVersion, v) != "1.26.3" {
		t.Error("version patterns do not match nginx -V output")
	}
	if m := rePCRE2Version.FindSubmatch([]byte("xx\x0010.46 2025-08-27\x00yy")); m == nil || string(m[1]) != "10.46" {
		t.Errorf("PCRE2 version pattern: %q", m)
	}
}
