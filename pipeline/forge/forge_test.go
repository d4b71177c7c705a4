package forge_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// journal is the order in which things happened, across the fake engine, the source mirror
// and the registry.
type journal struct {
	mu     sync.Mutex
	events []string
}

func (j *journal) add(e string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.events = append(j.events, e)
}

func (j *journal) list() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

// first is the index of the first event with the prefix, or -1.
func (j *journal) first(prefix string) int {
	for i, e := range j.list() {
		if strings.HasPrefix(e, prefix) {
			return i
		}
	}
	return -1
}

// fakeEngine builds a small install tree without compiling and answers the smoke test as
// told; everything around it (fetch, assembly, registry) is real.
type fakeEngine struct {
	j            *journal
	preflightErr error
	buildErr     error
	smokeFails   bool
	smokeSkips   string // a check the engine reports as skipped (could not run it)
}

var _ engine.Engine = (*fakeEngine)(nil)

func (e *fakeEngine) Name() string { return "fake" }
func (e *fakeEngine) Preflight(ctx context.Context, smoke bool) error {
	e.j.add("preflight")
	return e.preflightErr
}
func (e *fakeEngine) Builder(ctx context.Context, p *plan.Plan) (engine.Builder, error) {
	return engine.Builder{Glibc: "2.36"}, nil
}
func (e *fakeEngine) Build(ctx context.Context, p *plan.Plan, sources map[string]string, dir string, steps progress.Sink) ([]engine.Stage, error) {
	e.j.add("build " + p.Platform.String())
	if e.buildErr != nil {
		return nil, e.buildErr
	}
	if err := engine.VerifySources(p, sources); err != nil {
		return nil, err
	}
	files := map[string]string{"usr/sbin/nginx": "\x7fELF fake nginx", "etc/nginx/nginx.conf": "events {}\n"}
	if p.Final == plan.StagePGOTrain {
		// What a training leaves (plan: pgoTrainScript).
		files = map[string]string{"pgo/compiler": "12.2.0 x86_64-linux-gnu\n", "pgo/nginx/src#core#nginx.gcda": "counters", "pgo/openssl/ssl#ssl_lib.gcda": "counters"}
	}
	for f, body := range files {
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(f)), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o755); err != nil {
			return nil, err
		}
	}
	for _, d := range plan.Runtime.WritableDirs {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	var stages []engine.Stage
	for _, s := range p.Stages {
		steps.Send(progress.StepStarted{Step: s.Name})
		steps.Send(progress.StepDone{Step: s.Name, Cache: progress.Cached})
		stages = append(stages, engine.Stage{Name: s.Name, Cached: true})
	}
	return stages, nil
}
func (e *fakeEngine) PackageVersion(ctx context.Context, p *plan.Plan, pkg string) (string, error) {
	return "1:4.4.36-4", nil
}
func (e *fakeEngine) Smoke(ctx context.Context, p *plan.Plan, img v1.Image, o smoke.Options) (smoke.Report, error) {
	d, _ := img.Digest()
	e.j.add("smoke " + d.String())
	st := smoke.Pass
	if e.smokeFails {
		st = smoke.Fail
	}
	rep := smoke.Report{Results: []smoke.Result{{Name: smoke.CheckHTTP, Status: st, Detail: "fake"}}}
	if e.smokeSkips != "" {
		rep.Results = append(rep.Results, smoke.Result{Name: e.smokeSkips, Status: smoke.Skip, Detail: "the runtime cannot tell: fake", Unobservable: true})
	}
	return rep, nil
}
func (e *fakeEngine) Close() error { return nil }

// world is a lock whose sources a loopback mirror serves, and a real registry (behind a
// proxy that writes every manifest upload into the journal) holding a runtime base.
type world struct {
	j       *journal
	lock    *lock.Lock
	mirror  string
	reg     string // the proxy's host
	base    string // the runtime image by digest
	repo    string
	fetches int
	mu      sync.Mutex
	files   map[string][]byte // what the mirror serves, by path
	// advisories is an empty snapshot (newWorld): see there.
	advisories string
}

// serve makes the mirror serve body as /name.
func (w *world) serve(name string, body []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.files["/"+name] = body
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{j: &journal{}}
	// A source cache of the test's own, so every fetch reaches the mirror and is seen.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	l := lock.Default()
	files := map[string][]byte{}
	var comps []lock.Component
	for _, c := range l.Components {
		// A real archive: the fetcher unpacks it under pipeline/unpack's policy.
		body := upstreamtest.Tarball(t, c.Name+"-"+c.Version, map[string]string{"README": "the source of " + c.Name + " " + c.Version + "\n"})
		sum := sha256.Sum256(body)
		c.SHA256 = hex.EncodeToString(sum[:])
		c.Signature = nil
		c.Unsigned = "a test file, not upstream's"
		files["/"+path.Base(c.URL)] = body
		comps = append(comps, c)
	}
	l.Components = comps
	w.files = files
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.mu.Lock()
		w.fetches++
		body, ok := w.files[r.URL.Path]
		w.mu.Unlock()
		w.j.add("fetch " + r.URL.Path)
		if !ok {
			http.NotFound(rw, r)
			return
		}
		rw.Write(body)
	}))
	t.Cleanup(srv.Close)
	w.mirror = srv.URL

	reg := registrytest.Host(t)
	proxy := registrytest.NewProxy(t, reg)
	proxy.SetRule(func(r registrytest.Request) registrytest.Action {
		if registrytest.IsManifestPut(r) {
			w.j.add("put " + path.Base(r.Path))
		}
		return registrytest.Pass
	})
	w.reg = proxy.Host

	layer, err := crane.Layer(map[string][]byte{"var/lib/dpkg/status.d/libc6": []byte("Package: libc6\nVersion: 2.41-12\n")})
	if err != nil {
		t.Fatal(err)
	}
	var base v1.Image
	if base, err = mutate.AppendLayers(empty.Image, layer); err != nil {
		t.Fatal(err)
	}
	cf, _ := base.ConfigFile()
	cf.OS, cf.Architecture = "linux", "amd64"
	if base, err = mutate.ConfigFile(base, cf); err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(reg + "/distroless/base:test")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, base); err != nil {
		t.Fatal(err)
	}
	d, _ := base.Digest()
	w.base = reg + "/distroless/base@" + d.String()
	w.lock = l
	w.repo = w.reg + "/nginx-forge/nginx"
	// These tests are about the order of a push, of the shipped lock whatever its versions:
	// an empty advisories snapshot keeps its advisories out of them (advisories_test.go
	// holds the advisory rules, with the reviewed snapshot).
	w.advisories = filepath.Join(t.TempDir(), "advisories.json")
	if err := os.WriteFile(w.advisories, []byte(`{"schema": 1, "feeds": {}, "advisories": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *world) request(dir string) forge.Request {
	return forge.Request{Lock: w.lock, Mirror: w.mirror, RuntimeImage: w.base, Repo: w.repo, Push: true,
		Output: filepath.Join(dir, "nginx.tar"), Advisories: w.advisories}
}

// tags lists the repository's tags (none when the repository does not exist yet).
func (w *world) tags(t *testing.T) []string {
	t.Helper()
	repo, err := name.NewRepository(w.repo)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(repo)
	if err != nil {
		var terr interface{ Error() string }
		if errors.As(err, &terr) && strings.Contains(err.Error(), "NAME_UNKNOWN") {
			return nil
		}
		t.Fatalf("listing %s: %v", w.repo, err)
	}
	var out []string
	for _, tag := range tags {
		if !strings.HasPrefix(tag, "sha256-") { // the SBOM referrer fallback tag
			out = append(out, tag)
		}
	}
	return out
}

func noFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after a failed build (%v)", p, err)
	}
}

func TestPublishesOnlyAfterSmoke(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	eng := &fakeEngine{j: w.j}
	var log strings.Builder
	branches := func(*lock.Lock) []string {
		return []string{"nginx 1.26.2 is on a superseded branch: run go run ./ci check-updates --write", "openssl 3.3.1 is past its end of life"}
	}
	res, err := runBuild(eng, w.request(dir), forge.WithProgress(textSink(&log)), forge.WithBranchWarnings(branches))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	// Publishing a superseded or end-of-life branch says so (pipeline/upstream's calendar,
	// given by the command), and goes on.
	if len(res.Warnings) != 2 || !strings.Contains(log.String(), "warning: nginx 1.26.2") || !strings.Contains(log.String(), "check-updates --write") {
		t.Errorf("branch warnings = %q; log:\n%s", res.Warnings, log.String())
	}
	ev := w.j.list()
	pre, fetch, build, smk, put := w.j.first("preflight"), w.j.first("fetch"), w.j.first("build"), w.j.first("smoke"), w.j.first("put")
	if !(pre >= 0 && pre < fetch && fetch < build && build < put && put < smk) {
		t.Fatalf("steps out of order (want preflight, fetch, build, push by digest, smoke): %q", ev)
	}
	// Tags are PUT by name after the smoke test of the digest.
	for i, e := range ev {
		if strings.HasPrefix(e, "put ") && !strings.HasPrefix(e, "put sha256:") && i < smk {
			t.Errorf("tag %s moved before the smoke test: %q", e, ev)
		}
	}
	if res.Published == nil || len(w.tags(t)) == 0 {
		t.Fatalf("nothing published: %+v, tags %q", res.Published, w.tags(t))
	}
	if _, err := os.Stat(filepath.Join(dir, "nginx.tar")); err != nil {
		t.Errorf("--output not written after a good build: %v", err)
	}
	if !strings.Contains(log.String(), "push: tags moved to") {
		t.Errorf("log lacks the tag line:\n%s", log.String())
	}
	var names []string
	for _, s := range res.Steps {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "preflight,fetch,build,smoke,publish" {
		t.Errorf("steps = %s", got)
	}
}

func TestFailedStepsLeaveNothing(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name string
		eng  *fakeEngine
		push bool
		want string
	}{
		{"preflight fails", &fakeEngine{j: w.j, preflightErr: errors.New("no engine here")}, true, "no engine here"},
		{"build fails", &fakeEngine{j: w.j, buildErr: errors.New("compiler exploded")}, true, "compiler exploded"},
		{"smoke fails before push", &fakeEngine{j: w.j, smokeFails: true}, true, "smoke checks failed"},
		{"smoke fails without push", &fakeEngine{j: w.j, smokeFails: true}, false, "smoke checks failed"},
		// Every check must run before a tag moves (issue 21): one the engine could not run
		// is a failure, whichever check it is.
		{"a check not run stops the push", &fakeEngine{j: w.j, smokeSkips: smoke.CheckReadOnly}, true, "smoke checks not run: " + smoke.CheckReadOnly},
		{"HTTP/3 not run on a build with http_v3", &fakeEngine{j: w.j, smokeSkips: smoke.CheckHTTP3}, false, "smoke checks not run: " + smoke.CheckHTTP3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			before := w.fetches
			req := w.request(dir)
			req.Push = tc.push
			_, err := runBuild(tc.eng, req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if tags := w.tags(t); len(tags) > 0 {
				t.Errorf("tags moved: %q", tags)
			}
			noFile(t, req.Output)
			noFile(t, req.Output+".spdx.json")
			if tc.name == "preflight fails" && w.fetches != before {
				t.Errorf("%d sources fetched before the preflight passed", w.fetches-before)
			}
		})
	}
}

func TestPushRefusesUnexplainedUnsigned(t *testing.T) {
	w := newWorld(t)
	w.lock.Components[0].Unsigned = ""
	dir := t.TempDir()
	_, err := runBuild(&fakeEngine{j: w.j}, w.request(dir))
	if err == nil || !strings.Contains(err.Error(), w.lock.Components[0].Name) || !strings.Contains(err.Error(), "unsigned") {
		t.Fatalf("err = %v, want a refusal naming %s and the unsigned field", err, w.lock.Components[0].Name)
	}
	// A refusal of the request itself: the command's usage exit (2), told apart by type.
	if !errors.As(err, new(*forge.RequestError)) {
		t.Errorf("err = %T %v, want a *forge.RequestError", err, err)
	}
	if w.j.first("preflight") >= 0 || w.fetches > 0 {
		t.Errorf("the build went ahead: %q", w.j.list())
	}
	if tags := w.tags(t); len(tags) > 0 {
		t.Errorf("tags moved: %q", tags)
	}
}

// The one skip that is not a failure: HTTP/3 on a build without the http_v3 module has
// nothing to check.
func TestHTTP3SkipPassesWithoutTheModule(t *testing.T) {
	w := newWorld(t)
	var mods []string
	for _, m := range plan.DefaultModulesOf(w.lock) {
		if m != plan.ModuleHTTP3 {
			mods = append(mods, m)
		}
	}
	req := w.request(t.TempDir())
	req.Push, req.Modules = false, mods
	var log strings.Builder
	if _, err := runBuild(&fakeEngine{j: w.j, smokeSkips: smoke.CheckHTTP3}, req, forge.WithProgress(textSink(&log))); err != nil {
		t.Fatalf("build without http_v3: %v\n%s", err, log.String())
	}
	if !strings.Contains(log.String(), "1 passed, 0 failed, 1 skipped") {
		t.Errorf("the log does not count the checks:\n%s", log.String())
	}
}

// runBuild resolves req and runs it, as the command does.
func runBuild(eng engine.Engine, req forge.Request, opts ...forge.Option) (*forge.Result, error) {
	rs, err := req.Resolve()
	if err != nil {
		eng.Close()
		return nil, err
	}
	return forge.Run(context.Background(), eng, rs, opts...)
}

// textSink writes the build's events as text, every note, for the tests to read.
func textSink(w io.Writer) progress.Sink {
	return progress.SinkFunc(func(e progress.Event) {
		switch e := e.(type) {
		case progress.Note:
			prefix := ""
			if e.Level == progress.Warning {
				prefix = "warning: "
			}
			fmt.Fprintf(w, "%s%s\n", prefix, e.Text)
		case progress.Smoked:
			fmt.Fprintf(w, "%s\nsmoke (%s): %d passed, %d failed, %d skipped\n", e.Table, e.Platform, e.Passed, e.Failed, e.Skipped)
		case progress.Signed:
			fmt.Fprintf(w, "push: signed %s (signature %s)\n", e.Digest, e.Signature)
		case progress.Tagged:
			fmt.Fprintf(w, "push: tags moved to %s: %s\n", e.Digest, strings.Join(e.Tags, ", "))
		default:
			fmt.Fprintf(w, "%#v\n", e)
		}
	})
}
