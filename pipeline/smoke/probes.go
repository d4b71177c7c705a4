package smoke

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// The catalogue modules' own checks: each third-party module of the component table that
// serves no content-coding (those have encodingChecks) proves it works through real
// requests. Its configuration is probes/<module>.conf, which the runner mounts with tls.conf
// (PrepareTLS writes it into the same directory, whose *.conf the shipped nginx.conf
// includes in http {}) only for an image that must have the module: its directives exist
// only there. Each check asks a server of its own name on 8080 (<module>.smoke.invalid) and
// runs only for such an image, so the table of an image without catalogue modules is
// unchanged. A module compiled in whose check fails fails the suite, like any check; a
// module configured but not compiled leaves nginx unable to read its configuration, so
// `nginx -t` and every request fail; and a module with no check here fails
// TestEveryCatalogueModuleHasAProbe.

//go:embed probes/*.conf
var probeConfs embed.FS

// probeMMDB is the test database the geoip2 probe reads, written beside its configuration.
const probeMMDB = "smoke.mmdb"

// probeCheck is module's check, or nil for a module this suite has no check for.
func probeCheck(module string) func(ctx context.Context, r *runner) (Status, string) {
	switch module {
	case "geoip2":
		return checkGeoIP2
	case "echo":
		return checkEcho
	case "fancyindex":
		return checkFancyindex
	}
	return nil
}

// probeModules are the table's modules that need a probe: those that serve no encoding.
func probeModules() []plan.Module {
	var out []plan.Module
	for _, m := range plan.Modules {
		if spec, ok := lock.SpecOf(firstComponent(m)); ok && spec.Kind == lock.KindModule && m.Encoding == "" {
			out = append(out, m)
		}
	}
	return out
}

func firstComponent(m plan.Module) string {
	if len(m.Components) == 0 {
		return ""
	}
	return m.Components[0]
}

// probeChecks are the checks of the catalogue modules the image must have (Expect.Wants),
// named after the module, in the table's order. A module without a check is a failed row,
// never a silent gap.
func (r *runner) probeChecks(ctx context.Context) []check {
	var out []check
	for _, m := range probeModules() {
		if !r.moduleWanted(ctx, m.Flag) {
			continue
		}
		run := probeCheck(m.Name)
		if r.o.TLS == nil {
			// The probes are mounted with tls.conf (PrepareTLS): without it there is no
			// server to ask, as for the TLS checks.
			run = func(context.Context, *runner) (Status, string) {
				return Skip, "no /etc/nginx/tls mounted (Options.TLS is nil), which carries the module's check configuration"
			}
		} else if run == nil {
			name := m.Name
			run = func(context.Context, *runner) (Status, string) {
				return Fail, "the smoke suite has no check for module " + name + " (pipeline/smoke/probes.go)"
			}
		}
		out = append(out, check{m.Name, run})
	}
	return out
}

// probeFiles are the files PrepareTLS adds to the mounted directory for the catalogue
// modules wants says the image must have: each one's probes/<module>.conf, and the geoip2
// probe's database. None for an image without them.
func probeFiles(wants func(flag string) bool) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, m := range probeModules() {
		if !wants(m.Flag) {
			continue
		}
		conf, err := probeConfs.ReadFile("probes/" + m.Name + ".conf")
		if err != nil {
			return nil, fmt.Errorf("module %s has no smoke configuration probes/%s.conf: %w", m.Name, m.Name, err)
		}
		out["probe-"+m.Name+".conf"] = conf
		if m.Name == "geoip2" {
			db, err := writeMMDB(geoip2Networks)
			if err != nil {
				return nil, err
			}
			out[probeMMDB] = db
		}
	}
	return out, nil
}

// geoip2Networks is the test database's content: one documentation network (RFC 5737).
var geoip2Networks = []mmdbCountry{{netip.MustParsePrefix("192.0.2.0/24"), "NL"}}

// probeGet asks the probe server of module (by its name, module.smoke.invalid) for path,
// with extra headers.
func (r *runner) probeGet(ctx context.Context, module, path string, hdr map[string]string) (int, string, error) {
	if err := r.waitReady(ctx); err != nil {
		return 0, "", errors.New("not listening (see " + CheckHTTP + ")")
	}
	c := r.httpClient(nil)
	defer c.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.t.Addr("tcp", r.o.HTTPPort)+path, nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = module + ".smoke.invalid"
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(body), err
}

// checkGeoIP2: an address inside the test database's network maps to its country, one
// outside to none.
func checkGeoIP2(ctx context.Context, r *runner) (Status, string) {
	var got []string
	for _, c := range []struct{ addr, want string }{{"192.0.2.77", "country=NL\n"}, {"198.51.100.7", "country=\n"}} {
		code, body, err := r.probeGet(ctx, "geoip2", "/", map[string]string{"X-Smoke-Address": c.addr})
		if err != nil {
			return Fail, err.Error()
		}
		if code != http.StatusOK || body != c.want {
			return Fail, fmt.Sprintf("X-Smoke-Address: %s answered %d %q, want 200 %q", c.addr, code, body, c.want)
		}
		got = append(got, c.addr+" -> "+strings.TrimSpace(body))
	}
	return Pass, strings.Join(got, ", ") + " (the suite's MaxMind DB)"
}

// checkEcho: the body the echo directive writes, with the request's argument in it.
func checkEcho(ctx context.Context, r *runner) (Status, string) {
	code, body, err := r.probeGet(ctx, "echo", "/?say=hello", nil)
	if err != nil {
		return Fail, err.Error()
	}
	if want := "echo said hello\n"; code != http.StatusOK || body != want {
		return Fail, fmt.Sprintf("GET /?say=hello answered %d %q, want 200 %q", code, body, want)
	}
	return Pass, fmt.Sprintf("GET /?say=hello answered %q", strings.TrimSpace(body))
}

// checkFancyindex: the listing of /usr/share/nginx in fancyindex's table, linking html/.
func checkFancyindex(ctx context.Context, r *runner) (Status, string) {
	code, body, err := r.probeGet(ctx, "fancyindex", "/", nil)
	if err != nil {
		return Fail, err.Error()
	}
	if code != http.StatusOK || !strings.Contains(body, `<table id="list">`) || !strings.Contains(body, `href="html/"`) {
		return Fail, fmt.Sprintf("GET / answered %d with %d bytes, want 200 and fancyindex's <table id=\"list\"> linking html/:\n%s", code, len(body), tail(body, 5))
	}
	return Pass, fmt.Sprintf("listing of /usr/share/nginx (%d bytes) links html/", len(body))
}
