package main

import (
	"encoding/base64"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// Issue 29, class "messages that mislead": a failure that another run cannot fix must not
// be called transient, and a transient one must say so. One rule (netfail.Transient) decides.
func TestPermanentFailuresAreNotCalledTransient(t *testing.T) {
	notInActions(t)
	for _, c := range []struct {
		name      string
		setup     func(t *testing.T, s *upstreamtest.Scenario) []string
		transient bool
		want      string
	}{
		{"a track that matches no release", func(t *testing.T, s *upstreamtest.Scenario) []string {
			l, err := lock.Load(s.LockFile)
			if err != nil {
				t.Fatal(err)
			}
			o := l.MustComponent(lock.OpenSSL)
			o.Track = "3.9"
			l.SetComponent(o)
			if err := l.Write(s.LockFile); err != nil {
				t.Fatal(err)
			}
			return nil
		}, false, `set openssl's "track" in the lock`},
		{"GitHub answers 401", func(t *testing.T, s *upstreamtest.Scenario) []string {
			s.Upstream.FailGitHub("openssl/openssl", http.StatusUnauthorized)
			return nil
		}, false, "refused the credentials (HTTP 401)"},
		{"GitHub answers 403", func(t *testing.T, s *upstreamtest.Scenario) []string {
			s.Upstream.FailGitHub("openssl/openssl", http.StatusForbidden)
			return nil
		}, false, "not transient until the rate limit resets"}, // the stand-in's 403 is GitHub's rate limit answer
		{"GitHub answers 404", func(t *testing.T, s *upstreamtest.Scenario) []string {
			s.Upstream.FailGitHub("openssl/openssl", http.StatusNotFound)
			return nil
		}, false, "no such resource (HTTP 404)"},
		{"the mirror answers 404", func(t *testing.T, s *upstreamtest.Scenario) []string {
			s.Upstream.RemoveFile(upstreamtest.TarballName)
			return nil
		}, false, "no such resource (HTTP 404)"},
		{"GitHub answers 503", func(t *testing.T, s *upstreamtest.Scenario) []string {
			s.Upstream.FailGitHub("openssl/openssl", http.StatusServiceUnavailable)
			return nil
		}, true, "HTTP 503"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			extra := append([]string{"--write", "--skip-images"}, c.setup(t, s)...)
			code, out, errs := runCheckUpdates(t, s, extra...)
			all := out + errs
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, all)
			}
			saysTransient := strings.Contains(all, "to resolve: transient (")
			saysPermanent := strings.Contains(all, "to resolve: not transient")
			if saysTransient != c.transient || saysPermanent == c.transient {
				t.Errorf("transient %v, but the output says transient %v, not transient %v:\n%s", c.transient, saysTransient, saysPermanent, all)
			}
			if !strings.Contains(all, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, all)
			}
		})
	}
}

// A --write whose source cache cannot be used (a file, no HOME to find the default in) is a
// usage error before anything is looked up, not a refused release to retry.
func TestCheckUpdatesRefusesAnUnusableCache(t *testing.T) {
	notInActions(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		env   map[string]string
		cache string
		want  string
	}{
		{"--cache is a file", nil, file, file + " is not a directory"},
		{"--cache is under a file", nil, filepath.Join(file, "sub"), file + " is not a directory"},
		{"no HOME and no XDG_CACHE_HOME", map[string]string{"HOME": "", "XDG_CACHE_HOME": ""}, "", "set XDG_CACHE_HOME or HOME, or give --cache DIR"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			s := upstreamtest.NewScenario(t)
			before := len(s.Upstream.Requests())
			code, out, errs := runCheckUpdates(t, s, "--write", "--skip-images", "--cache", c.cache)
			if code != 2 || !strings.Contains(errs, c.want) || strings.Contains(out+errs, "transient") {
				t.Errorf("exit %d, want 2 naming %q and no retry advice:\n%s%s", code, c.want, out, errs)
			}
			if n := len(s.Upstream.Requests()) - before; n != 0 {
				t.Errorf("%d requests were made before the refusal", n)
			}
		})
	}
}

// hostileGitHub answers the scenario's GitHub API, except openssl's release list, which
// bad serves.
func hostileGitHub(t *testing.T, s *upstreamtest.Scenario, bad http.HandlerFunc) string {
	target, err := url.Parse(s.Upstream.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/repos/openssl/openssl/releases") {
			bad(w, r)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/api"
}

// Issue 29: an oversized or trickling answer was reported as bad JSON. The error names the
// size limit, or the run's deadline.
func TestOversizedAndTricklingAnswersNameTheirCause(t *testing.T) {
	notInActions(t)
	oversized := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		item := []byte(`{"tag_name":"openssl-3.5.8","draft":false,"prerelease":false},`)
		w.Write([]byte("["))
		for n := 0; n < 17<<20; n += len(item) {
			if _, err := w.Write(item); err != nil {
				return
			}
		}
		w.Write([]byte(`{"tag_name":"openssl-3.5.8"}]`))
	}
	trickling := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for {
			if _, err := w.Write([]byte(" ")); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	for _, c := range []struct {
		name    string
		handler http.HandlerFunc
		want    []string
	}{
		{"oversized", oversized, []string{"more than the 16777216-byte limit", "to resolve: not transient"}},
		{"trickling", trickling, []string{"2s deadline", "--timeout", "to resolve: transient ("}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			api := hostileGitHub(t, s, c.handler)
			start := time.Now()
			code, out, errs := runCheckUpdates(t, s, "--skip-images", "--timeout", "2s", "--github-api", api)
			all := out + errs
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, all)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("took %s with a 2s deadline", took)
			}
			if strings.Contains(all, "JSON") {
				t.Errorf("reported as bad JSON:\n%s", all)
			}
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
		})
	}
}

// Issue 29: `smoke --timeout 0` gave a deadline error instead of a usage error. Every
// command's --timeout is checked as a flag, before any work: a negative one (and for those
// whose 0 means nothing, 0) is a usage error naming the flag.
func TestTimeoutFlagsAreCheckedAsFlags(t *testing.T) {
	type timeoutFlag struct{ command, flag string }
	var found []timeoutFlag
	for name, c := range commands {
		fs := flag.NewFlagSet(name, flag.ContinueOnError)
		c.declare(fs)
		fs.VisitAll(func(f *flag.Flag) {
			if f.Name == "timeout" || strings.HasSuffix(f.Name, "-timeout") {
				found = append(found, timeoutFlag{name, f.Name})
			}
		})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].command+found[i].flag < found[j].command+found[j].flag })
	// The commands whose --timeout 0 has a meaning of its own (see their help).
	zeroMeans := map[timeoutFlag]bool{{"bench", "timeout"}: true, {"tune", "timeout"}: true}
	extra := map[string][]string{
		"smoke":         {"--address", "127.0.0.1:1"},
		"check-updates": {"--lock", filepath.Join(t.TempDir(), "none.json")},
		"manifest":      {"--image", "127.0.0.1:1/x", "sha256:" + strings.Repeat("a", 64)},
		"build":         {"--engine", "host", "--no-smoke", "--output", filepath.Join(t.TempDir(), "never.tar")},
	}
	if len(found) < 6 {
		t.Fatalf("found only %v", found)
	}
	var names []string
	for _, tf := range found {
		values := []string{"-1s", "-5m"}
		if !zeroMeans[tf] {
			values = append(values, "0", "0s")
		}
		for _, v := range values {
			args := append([]string{tf.command, "--" + tf.flag, v}, extra[tf.command]...)
			start := time.Now()
			code, stdout, stderr := runWithin(t, 10*time.Second, args...)
			if code != 2 || !strings.Contains(stderr, "--"+tf.flag) || strings.Contains(stderr, "deadline exceeded") {
				t.Errorf("%q: exit %d, want 2 naming --%s\nstdout: %s\nstderr: %s", args, code, tf.flag, stdout, stderr)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("%q: refused after %s, want at once", args, took)
			}
		}
		names = append(names, tf.command+" --"+tf.flag)
	}
	t.Logf("checked %s", strings.Join(names, ", "))
}

// Issue 29: an older upstream version appeared in the pull request body's "new" column
// (the lock has a newer release than upstream lists on its track). It reads unchanged there
// and in the step outputs; a warning says what upstream has.
func TestOlderUpstreamIsNotNew(t *testing.T) {
	notInActions(t)
	dir := t.TempDir()
	outFile, sumFile := filepath.Join(dir, "output"), filepath.Join(dir, "summary")
	for _, f := range []string{outFile, sumFile} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("GITHUB_ACTIONS", "true")
	t.Setenv("GITHUB_OUTPUT", outFile)
	t.Setenv("GITHUB_STEP_SUMMARY", sumFile)
	s := upstreamtest.NewScenario(t)
	s.Upstream.SetGitHub("openssl/openssl", "releases", upstreamtest.ReleasesJSON("openssl/openssl", "openssl-3.5.6", "openssl-3.5.5"))
	s.Upstream.SetGitHub("openssl/openssl", "tags", upstreamtest.TagsJSON("openssl/openssl", "openssl-3.5.6", "openssl-3.5.5"))
	body := filepath.Join(dir, "body.md")
	// The base images move, so the lock is written and the body with it.
	code, out, errs := runCheckUpdates(t, s, "--write", "--pr-body", body)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	b, err := os.ReadFile(body)
	if err != nil {
		t.Fatal(err)
	}
	summary, _ := os.ReadFile(sumFile)
	for what, text := range map[string]string{"the body": string(b), "the step summary": string(summary)} {
		if strings.Contains(text, "**3.5.6**") || !strings.Contains(text, "| openssl | `3.5.7` | (unchanged) |") {
			t.Errorf("%s shows upstream's older 3.5.6 as new:\n%s", what, text)
		}
	}
	if !strings.Contains(out, "newer than the newest 3.5 release upstream (3.5.6)") {
		t.Errorf("no warning about the older upstream release:\n%s", out)
	}
}

// A server's echo of the credentials it was sent (a registry quoting the Basic
// credentials) reaches no output of check-updates: not its lines, annotations, step outputs
// or summary, and not the pull request body.
func TestCheckUpdatesRedactsEchoedCredentials(t *testing.T) {
	notInActions(t)
	const user, password = "robot", "s3cr3t-registry-pa55"
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	s := upstreamtest.NewScenario(t)
	reg := echoingRegistry(t, s.Registry)
	cfg := t.TempDir()
	auth := `{"auths":{"` + reg + `":{"auth":"` + basic + `"}}}`
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfg)
	dir := t.TempDir()
	outFile, sumFile, body := filepath.Join(dir, "output"), filepath.Join(dir, "summary"), filepath.Join(dir, "body.md")
	for _, f := range []string{outFile, sumFile} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, actions := range []bool{false, true} {
		if actions {
			t.Setenv("GITHUB_ACTIONS", "true")
			t.Setenv("GITHUB_OUTPUT", outFile)
			t.Setenv("GITHUB_STEP_SUMMARY", sumFile)
		}
		os.Remove(body)
		sc := *s
		sc.LockFile = filepath.Join(t.TempDir(), "stack.lock.json")
		if err := os.WriteFile(sc.LockFile, s.LockBytes(t), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errs := runCheckUpdates(t, &sc, "--write", "--registry", reg, "--pr-body", body)
		if code != exitPartial {
			t.Errorf("actions %v: exit %d, want %d (openssl written, the images refused)\n%s%s", actions, code, exitPartial, out, errs)
		}
		b, _ := os.ReadFile(body)
		outputs, _ := os.ReadFile(outFile)
		summary, _ := os.ReadFile(sumFile)
		all := out + errs + string(b) + string(outputs) + string(summary)
		if !strings.Contains(all, "UNAUTHORIZED") {
			t.Errorf("actions %v: the registry's refusal is not reported:\n%s", actions, all)
		}
		for _, secret := range []string{basic, password} {
			for what, text := range map[string]string{"stdout": strings.ReplaceAll(out, "::add-mask::"+secret, ""), "stderr": errs, "the body": string(b), "the outputs": string(outputs), "the summary": string(summary)} {
				if strings.Contains(text, secret) {
					t.Errorf("actions %v: %s holds the credential %q:\n%s", actions, what, secret, text)
				}
			}
		}
	}
}

// echoingRegistry is a registry in front of upstream (a loopback registry's host:port) that
// asks for Basic credentials, answers the tag lookups (HEAD) from upstream, and refuses every
// manifest GET with a 401 whose body quotes the credentials it was sent.
func echoingRegistry(t *testing.T, upstream string) string {
	target, err := url.Parse("http://" + upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		if authz == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"credentials `+authz+` rejected"}]}`)
			return
		}
		r.Header.Del("Authorization")
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
