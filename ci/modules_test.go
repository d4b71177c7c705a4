package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// `ci modules` lists every module once, with what it adds, marking the lock's default set.
func TestModulesCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"modules", "--lock", testLockPath}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]bool{}
	for _, m := range plan.DefaultModulesOf(l) {
		def[m] = true
	}
	rows := map[string][]string{}
	for _, line := range strings.Split(stdout.String(), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 3 {
			rows[f[0]] = f[1:]
		}
	}
	for _, m := range plan.Modules {
		row, ok := rows[m.Name]
		if !ok {
			t.Errorf("module %s is not listed:\n%s", m.Name, stdout.String())
			continue
		}
		if want := map[bool]string{true: "yes", false: "-"}[def[m.Name]]; row[0] != want {
			t.Errorf("module %s: default column %q, want %q", m.Name, row[0], want)
		}
		if m.Summary == "" || !strings.Contains(strings.Join(row[1:], " "), m.Summary) {
			t.Errorf("module %s: %q lacks what it adds (%q)", m.Name, row, m.Summary)
		}
		// A third-party module names each component with its version and licence.
		for _, name := range m.Components {
			want := name
			if c, ok := l.Component(name); ok {
				want += " " + c.Version
			}
			spec, _ := lock.SpecOf(name)
			if want += " " + spec.License; !strings.Contains(strings.Join(row[1:], " "), want) {
				t.Errorf("module %s: %q lacks %q", m.Name, row, want)
			}
		}
	}
}

// A wrong --modules entry is a usage error before anything is fetched.
func TestBuildModulesErrorsBeforeFetch(t *testing.T) {
	for _, c := range []struct{ modules, want string }{
		{"+brotil", `unknown nginx module "brotil"`},
		{"-zstd,mail", "mixes plain names"},
		{"-http_ssl", `"http_v3" needs module "http_ssl"`},
		// A catalogue module whose components the lock lacks (the test twin has none of geoip2's).
		{"+geoip2", `nginx module "geoip2" is built from the lock components ngx_http_geoip2_module and libmaxminddb`},
	} {
		srv, requests := countingMirror(t)
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), []string{"build", "--engine", "host", "--no-smoke", "--lock", testLockPath, "--mirror", srv.URL,
			"--tree", filepath.Join(t.TempDir(), "tree"), "--cache", t.TempDir(), "--modules", c.modules}, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("--modules %s: exit %d, stderr %q; want 2 and %q", c.modules, code, stderr.String(), c.want)
		}
		if requests.Load() != 0 {
			t.Errorf("--modules %s: the mirror was asked for files", c.modules)
		}
	}
}
