package plan_test

import (
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// --modules arithmetic: +name and -name change the default set, a plain list replaces it.
func TestApplyModules(t *testing.T) {
	base := []string{"http_ssl", "http_v2", "brotli", "zstd"}
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"+mail", "-zstd"}, "http_ssl http_v2 brotli mail"},
		{[]string{"-brotli", "-zstd"}, "http_ssl http_v2"},
		{[]string{"+brotli"}, "http_ssl http_v2 brotli zstd"},             // already there: unchanged
		{[]string{"-mail"}, "http_ssl http_v2 brotli zstd"},               // not there: unchanged
		{[]string{"+mail", "+mail"}, "http_ssl http_v2 brotli zstd mail"}, // once
		{[]string{"http_ssl", "pcre-jit"}, "http_ssl pcre-jit"},           // a plain list replaces
		{[]string{"pcre-jit"}, "pcre-jit"},                                // a name with a dash is not a removal
		{nil, ""},
	} {
		got, err := plan.ApplyModules(base, c.list)
		if err != nil {
			t.Errorf("%q: %v", c.list, err)
			continue
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("%q on %q = %q, want %q", c.list, base, strings.Join(got, " "), c.want)
		}
	}
	if strings.Join(base, " ") != "http_ssl http_v2 brotli zstd" {
		t.Errorf("ApplyModules changed its base: %q", base)
	}
	for _, c := range []struct {
		list []string
		want string
	}{
		{[]string{"+brotil"}, `unknown nginx module "brotil": known modules are`},
		{[]string{"-zstd", "mail"}, "mixes plain names"},
		{[]string{"+mail", "-mail"}, "both adds and removes mail"},
		{[]string{"+"}, `empty entry "+"`},
		{[]string{"http_ssl", ""}, `empty entry ""`},
	} {
		if _, err := plan.ApplyModules(base, c.list); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.list, err, c.want)
		}
	}
}

// The plan applies the arithmetic to the lock's default set, and checks the result.
func TestRelativeModulesInPlan(t *testing.T) {
	l := testLock(t)
	def, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(l, plan.WithModules("+mail", "-zstd", "-http_v3"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"mail": true}
	for _, m := range def.Modules {
		if m != "zstd" && m != "http_v3" {
			want[m] = true
		}
	}
	if len(p.Modules) != len(want) {
		t.Errorf("modules %q, want the default %q with mail and without zstd, http_v3", p.Modules, def.Modules)
	}
	for _, m := range p.Modules {
		if !want[m] {
			t.Errorf("module %s in %q", m, p.Modules)
		}
	}
	ng, _ := p.Stage(lock.Nginx)
	if !strings.Contains(ng.Script, "--with-mail ") || strings.Contains(ng.Script, "zstd_nginx_module") || strings.Contains(ng.Script, "--with-http_v3_module") {
		t.Errorf("the nginx stage does not follow the module set:\n%s", ng.Script)
	}
	// Removing what another default module needs is the plan's error, naming both.
	if _, err := plan.New(l, plan.WithModules("-http_ssl")); err == nil || !strings.Contains(err.Error(), `"http_v3" needs module "http_ssl"`) {
		t.Errorf("-http_ssl: err = %v, want http_v3's requirement named", err)
	}
}
