package smoke

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// missingProbes names the modules of mods that lack a check (checkOf) or a configuration
// (probes/<module>.conf in confs).
func missingProbes(mods []plan.Module, checkOf func(string) func(context.Context, *runner) (Status, string), confs fs.FS) []string {
	var out []string
	for _, m := range mods {
		if checkOf(m.Name) == nil {
			out = append(out, m.Name+": no check (probeCheck)")
		}
		if _, err := fs.Stat(confs, "probes/"+m.Name+".conf"); err != nil {
			out = append(out, m.Name+": no probes/"+m.Name+".conf")
		}
	}
	return out
}

// TestEveryCatalogueModuleHasAProbe: every third-party module of the component table that
// serves no content-coding has its own check and its configuration; a module added to the
// table without them, or a check deleted, fails here (planted below).
func TestEveryCatalogueModuleHasAProbe(t *testing.T) {
	mods := probeModules()
	if len(mods) == 0 {
		t.Fatal("no catalogue module needs a probe: the table lost its modules")
	}
	if m := missingProbes(mods, probeCheck, probeConfs); len(m) > 0 {
		t.Errorf("catalogue modules without their smoke check:\n  %s", strings.Join(m, "\n  "))
	}
	// Planted: a module the table has but the suite does not, and a check deleted.
	planted := append(append([]plan.Module(nil), mods...), plan.Module{Name: "planted", Flag: "--add-module=../planted", Components: []string{"planted"}})
	deleted := func(name string) func(context.Context, *runner) (Status, string) {
		if name == mods[0].Name {
			return nil
		}
		return probeCheck(name)
	}
	got := strings.Join(missingProbes(planted, deleted, probeConfs), "\n")
	for _, want := range []string{mods[0].Name + ": no check", "planted: no check", "planted: no probes/planted.conf"} {
		if !strings.Contains(got, want) {
			t.Errorf("planted gaps reported as\n%s\nwant a line with %q", got, want)
		}
	}
}

// probeServer answers the probe hosts as a server with working modules would (working), or
// as one whose module does nothing (no country found, the directive's text unexpanded, a
// listing that is not fancyindex's).
func probeServer(t *testing.T, working bool) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Host {
		case "geoip2.smoke.invalid":
			country := ""
			if a, err := netip.ParseAddr(r.Header.Get("X-Smoke-Address")); err == nil && working && geoip2Networks[0].prefix.Contains(a) {
				country = geoip2Networks[0].code
			}
			w.Write([]byte("country=" + country + "\n"))
		case "echo.smoke.invalid":
			if working {
				w.Write([]byte("echo said " + r.URL.Query().Get("say") + "\n"))
			} else {
				w.Write([]byte("echo said $arg_say\n"))
			}
		case "fancyindex.smoke.invalid":
			if working {
				w.Write([]byte(`<table id="list"><tr><td><a href="html/">html/</a></td></tr></table>`))
			} else {
				w.Write([]byte(`<html><body><pre><a href="html/">html/</a></pre></body></html>`)) // autoindex's shape
			}
		default:
			w.Write([]byte("index\n"))
		}
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// TestProbeChecksNeedTheModulesEffect: each catalogue check passes against a server that
// does what the module does and fails against one that serves the same configuration's
// plain answers; an image not expected to have the modules gets no such rows at all (its
// table is unchanged by the catalogue).
func TestProbeChecksNeedTheModulesEffect(t *testing.T) {
	var flags []string
	for _, m := range probeModules() {
		flags = append(flags, m.Flag)
	}
	rows := func(addr string, modules []string) map[string]Result {
		t.Helper()
		r := &runner{t: httpOnly{addr}, o: Options{Expect: Expect{Modules: modules}, TLS: &TLS{}, StartTimeout: 5 * time.Second, CheckTimeout: 5 * time.Second}}
		out := map[string]Result{}
		for _, c := range r.probeChecks(context.Background()) {
			st, detail := c.run(context.Background(), r)
			out[c.name] = Result{Name: c.name, Status: st, Detail: detail}
		}
		return out
	}
	good := rows(probeServer(t, true), flags)
	bad := rows(probeServer(t, false), flags)
	for _, m := range probeModules() {
		if r, ok := good[m.Name]; !ok || r.Status != Pass {
			t.Errorf("%s against a working server: %+v (ran: %v)", m.Name, r, ok)
		}
		if r, ok := bad[m.Name]; !ok || r.Status != Fail {
			t.Errorf("%s against a server whose module does nothing: %+v, want a failure", m.Name, r)
		}
	}
	if none := rows(probeServer(t, true), []string{"--with-threads"}); len(none) != 0 {
		t.Errorf("an image without catalogue modules got their checks: %v", none)
	}
}

// TestProbeFiles: the mounted directory carries a module's configuration and the geoip2
// database only for an image that must have the module.
func TestProbeFiles(t *testing.T) {
	all, err := probeFiles(func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range probeModules() {
		if !strings.Contains(string(all["probe-"+m.Name+".conf"]), m.Name+".smoke.invalid") {
			t.Errorf("no probe configuration for %s serving %s.smoke.invalid", m.Name, m.Name)
		}
	}
	if db := all[probeMMDB]; !strings.Contains(string(db), "\xab\xcd\xefMaxMind.com") {
		t.Errorf("no MaxMind DB %s with the geoip2 probe", probeMMDB)
	}
	if none, err := probeFiles(func(string) bool { return false }); err != nil || len(none) != 0 {
		t.Errorf("an image without catalogue modules gets probe files %v (%v)", none, err)
	}
}

// httpOnly is a target that reaches a server over TCP and can observe nothing else.
type httpOnly struct{ addr string }

func (t httpOnly) Exec(context.Context, ...string) ([]byte, []byte, int, error) {
	return nil, nil, -1, errors.ErrUnsupported
}
func (t httpOnly) Addr(string, int) string { return t.addr }
func (t httpOnly) DialContext(ctx context.Context, _, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", address)
}
func (t httpOnly) ListenPacket(context.Context, string, string) (net.PacketConn, error) {
	return nil, errors.ErrUnsupported
}
func (t httpOnly) RootFS() string                               { return "" }
func (t httpOnly) ProcStatus(context.Context) ([]string, error) { return nil, errors.ErrUnsupported }
func (t httpOnly) MountInfo(context.Context) (string, error)    { return "", errors.ErrUnsupported }
func (t httpOnly) Logs() ([]byte, error)                        { return nil, errors.ErrUnsupported }
func (t httpOnly) Exited() (bool, string)                       { return false, "" }
