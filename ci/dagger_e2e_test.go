//go:build integration

package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// DaggerE2EEnv makes a missing Dagger engine a failure of TestDaggerBuildEndToEnd instead of
// a skip: .ci/test sets it when it started the lab engine itself, so that a lab that did not
// come up cannot pass as "skipped".
const DaggerE2EEnv = "NGINX_FORGE_DAGGER_E2E"

// needDaggerEngine skips (or, under DaggerE2EEnv=1, fails) unless the Dagger SDK has an engine
// to talk to without downloading anything: a `dagger run` session, or a runner host that
// answers, and a dagger CLI to start the session with. A container runtime the CLI could
// start an engine in does not count: that would pull the engine image from the internet.
func needDaggerEngine(t *testing.T) {
	t.Helper()
	why := daggerEngineMissing()
	if why == "" {
		return
	}
	if os.Getenv(DaggerE2EEnv) == "1" {
		t.Fatalf("no Dagger engine (%s=1 makes this a failure): %s", DaggerE2EEnv, why)
	}
	t.Skipf("skipped: no Dagger engine: %s (on a machine with the lab: ../shared/lab/dagger-lab start, then eval \"$(../shared/lab/dagger-lab env)\")", why)
}

func daggerEngineMissing() string {
	dial := func(network, addr string) string {
		c, err := net.DialTimeout(network, addr, 5*time.Second)
		if err != nil {
			return err.Error()
		}
		c.Close()
		return ""
	}
	if port := os.Getenv("DAGGER_SESSION_PORT"); port != "" {
		if err := dial("tcp", net.JoinHostPort("127.0.0.1", port)); err != "" {
			return "DAGGER_SESSION_PORT=" + port + ", but " + err
		}
		return ""
	}
	host := os.Getenv("_EXPERIMENTAL_DAGGER_RUNNER_HOST")
	if host == "" {
		return "neither DAGGER_SESSION_PORT nor _EXPERIMENTAL_DAGGER_RUNNER_HOST is set"
	}
	if bin := os.Getenv("_EXPERIMENTAL_DAGGER_CLI_BIN"); bin == "" {
		if _, err := exec.LookPath("dagger"); err != nil {
			return "no dagger CLI (_EXPERIMENTAL_DAGGER_CLI_BIN unset, none in PATH): the SDK would download one"
		}
	}
	u, err := url.Parse(host)
	if err != nil {
		return "_EXPERIMENTAL_DAGGER_RUNNER_HOST=" + host + ": " + err.Error()
	}
	switch u.Scheme {
	case "unix":
		if err := dial("unix", u.Path); err != "" {
			return "_EXPERIMENTAL_DAGGER_RUNNER_HOST=" + host + ", but " + err
		}
	case "tcp":
		if err := dial("tcp", u.Host); err != "" {
			return "_EXPERIMENTAL_DAGGER_RUNNER_HOST=" + host + ", but " + err
		}
	}
	// Other schemes (kube-pod://, docker-container://) are the CLI's to reach.
	return ""
}

// stepLine is a progress line of a build's log (forge's progress): "nginx (linux/amd64):
// done in 1m2.3s" for a step that ran, ", from cache" added for one the engine reused.
var stepLine = regexp.MustCompile(`(?m)^(\S+) \(linux/amd64\): done in (\S+?)(, from cache)?$`)

// steps reads what the build reported of each step: cached or not, and its time.
func steps(log string) map[string]stepReport {
	out := map[string]stepReport{}
	for _, m := range stepLine.FindAllStringSubmatch(log, -1) {
		d, _ := time.ParseDuration(m[2])
		out[m[1]] = stepReport{cached: m[3] != "", took: d}
	}
	return out
}

type stepReport struct {
	cached bool
	took   time.Duration
}

// smokeCounts is the build's count of the smoke checks it ran on the pushed digest.
var smokeCounts = regexp.MustCompile(`(?m)^smoke \(linux/amd64\): (\d+) passed, (\d+) failed, (\d+) skipped$`)

// TestDaggerBuildEndToEnd is the production path, `ci build --push` with the default
// --engine dagger, on a real engine (issue 21), from the test lock's real tarballs (a
// loopback mirror) onto the stand-in distroless base published with Docker media types, to
// a loopback registry:
//
//   - the pushed digest passed every smoke check inside the engine (counted: all of
//     smoke.Checks, none skipped) before any tag moved;
//   - a second run takes the builder and every stage from the engine's cache, as the build
//     reports them, and gives the same digest, which --output's OCI layout holds too;
//   - `ci smoke --image REPO@DIGEST`, as a user types it (runc here), passes on that digest
//     with the expectations the image records (ngx_brotli included, no --expect-lock);
//   - the image is OCI throughout (manifest, config, layers) on the Docker-typed base;
//   - an nginx-only change (--modules) rebuilds the nginx stage and takes every other
//     stage from the cache.
//
// It needs an engine (needDaggerEngine): .ci/test starts the lab's when the machine has one.
func TestDaggerBuildEndToEnd(t *testing.T) {
	needDaggerEngine(t)
	mirror := testenv.Mirror(t)
	needHostSmoke(t) // ci smoke --image runs under runc here
	reg := registrytest.Start(t)
	base, err := basetestPushDockerTyped(t, reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lock.Load(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	var stages []string
	for _, s := range p.Stages {
		stages = append(stages, s.Name)
	}
	repo := reg.Host + "/nginx-forge/nginx"
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()

	build := func(what string, extra ...string) (string, map[string]stepReport, time.Duration) {
		t.Helper()
		args := append([]string{"build", "--lock", testLockPath, "--mirror", mirror}, extra...)
		var stdout, stderr bytes.Buffer
		start := time.Now()
		code := run(ctx, args, &stdout, &stderr)
		took := time.Since(start)
		if code != 0 {
			t.Fatalf("%s: ci %s: exit %d\n%s", what, strings.Join(args, " "), code, stderr.String())
		}
		t.Logf("%s (ci %s) took %s; its log:\n%s", what, strings.Join(args, " "), took.Round(time.Second), stderr.String())
		return stdout.String() + stderr.String(), steps(stderr.String()), took
	}
	pushArgs := []string{"--runtime-image", base, "--push", "--image", repo}

	// 1. Cold on a fresh engine (or warm when this engine built it before: reported, not assumed).
	out1, steps1, took1 := build("first build", pushArgs...)
	ref := digestRef(t, out1)
	m := smokeCounts.FindStringSubmatch(out1)
	if m == nil {
		t.Fatalf("the build does not report its smoke count (\"smoke (linux/amd64): N passed, N failed, N skipped\")")
	}
	if pass, _ := strconv.Atoi(m[1]); pass != len(smoke.Checks()) || m[2] != "0" || m[3] != "0" {
		t.Errorf("smoke checks in the engine: %s passed, %s failed, %s skipped; want all %d of smoke.Checks passed, none skipped", m[1], m[2], m[3], len(smoke.Checks()))
	}
	built := 0
	for _, s := range append([]string{"builder"}, stages...) {
		st, ok := steps1[s]
		if !ok {
			t.Errorf("first build: no progress line for %s", s)
		}
		if !st.cached {
			built++
		}
	}
	t.Logf("first build: %s in %s, %d of %d steps built (the rest from the engine's cache)", ref, took1.Round(time.Second), built, len(stages)+1)
	checkOCIThroughout(t, ref)

	// 2. Again, also writing --output, with -v and --sign-key: every step from the cache, the
	// same digest twice, the engine's own progress output rendered through the command's
	// sink, and the provenance naming the builder image by the digest the engine pulled.
	layoutDir := filepath.Join(dir, "layout")
	out2, steps2, took2 := build("second build", append(pushArgs, "--output", layoutDir, "-v", "--sign-key", signKeyFile(t))...)
	if !strings.Contains(out2, "dagger session --label dagger.io/sdk.name:go") {
		t.Errorf("-v: the Dagger engine's own progress output is not in the log")
	}
	bd, toolchain := slsaBuilderDependencies(t, ref)
	if len(bd) != 1 || len(bd[0].Digest["sha256"]) != 64 ||
		!strings.HasPrefix(bd[0].URI, "pkg:oci/ubuntu@sha256:"+bd[0].Digest["sha256"]) {
		t.Errorf("the provenance's builder images: %+v, want the lock's builder (ubuntu) by the digest the engine pulled", bd)
	} else {
		t.Logf("provenance: builder image %s", bd[0].URI)
	}
	// The toolchain the builder installed, as the engine read it in the builder.
	if tc := toolchain["linux/amd64"]; tc["gcc"] == "" || tc["binutils"] == "" || tc["libc6-dev"] == "" || tc[plan.LibcryptPackage] == "" {
		t.Errorf("the provenance's toolchain for linux/amd64: %v, want gcc, binutils, libc6-dev and %s with their versions", toolchain, plan.LibcryptPackage)
	} else {
		t.Logf("provenance: toolchain gcc %s, binutils %s, libc6-dev %s", tc["gcc"], tc["binutils"], tc["libc6-dev"])
	}
	if ref2 := digestRef(t, out2); ref2 != ref {
		t.Errorf("second build pushed %s, the first %s: not reproducible", ref2, ref)
	}
	for _, s := range append([]string{"builder"}, stages...) {
		if st, ok := steps2[s]; !ok || !st.cached {
			t.Errorf("second build: %s was not reported from the engine's cache (%+v, reported %v)", s, st, ok)
		}
	}
	if got := layoutDigest(t, layoutDir); !strings.HasSuffix(ref, "@"+got) {
		t.Errorf("--output holds %s, the push %s", got, ref)
	}
	t.Logf("second build: %s in %s", ref, took2.Round(time.Second))

	// 3. The pushed digest as a user checks it: no lock, no modules given.
	var sout, serr bytes.Buffer
	if code := run(ctx, []string{"smoke", "--image", ref}, &sout, &serr); code != 0 {
		t.Errorf("ci smoke --image %s: exit %d\n%s%s", ref, code, sout.String(), serr.String())
	} else if !strings.Contains(sout.String(), "expectations from the image's record") || !strings.Contains(sout.String(), smoke.BrotliModuleFlag) {
		t.Errorf("ci smoke --image did not check the image against its record (ngx_brotli included):\n%s", sout.String())
	}
	t.Logf("ci smoke --image %s:\n%s", ref, sout.String())
	daggerSmoke(ctx, t, ref)

	// 4. An nginx-only change: modules added to the default set. Which ones is drawn at
	// random, so that an engine that ran this test before has not built this nginx yet; a
	// draw it has built (its nginx reported from the cache) is drawn again.
	var extra []string
	for _, m := range plan.Modules {
		if len(m.Components) == 0 && len(m.Requires) == 0 && !slices.Contains(plan.DefaultModules, m.Name) {
			extra = append(extra, m.Name)
		}
	}
	for attempt := 1; ; attempt++ {
		var mods []string
		for _, m := range extra {
			if rand.IntN(2) == 0 {
				mods = append(mods, m)
			}
		}
		if len(mods) == 0 {
			mods = extra[:1]
		}
		modules := strings.Join(append(plan.DefaultModulesOf(l), mods...), ",")
		_, steps3, took3 := build(fmt.Sprintf("nginx-only change (attempt %d: + %s)", attempt, strings.Join(mods, ",")),
			"--modules", modules, "--tree", filepath.Join(dir, fmt.Sprintf("tree%d", attempt)))
		if st := steps3[lock.Nginx]; st.cached && attempt < 3 {
			t.Logf("this engine built nginx with + %s before: drawing again", strings.Join(mods, ","))
			continue
		}
		for _, s := range append([]string{"builder"}, stages...) {
			st, ok := steps3[s]
			if want := s != lock.Nginx; !ok || st.cached != want {
				t.Errorf("nginx-only change: %s reported cached=%v (line found: %v), want cached=%v", s, st.cached, ok, want)
			}
		}
		t.Logf("nginx-only change: the nginx stage took %s; the whole build %s", steps3[lock.Nginx].took, took3.Round(time.Second))
		break
	}
}

// basetestPushDockerTyped pushes the stand-in distroless base with Docker media types and
// returns its digest reference.
func basetestPushDockerTyped(t *testing.T, host string) (string, error) {
	img := basetest.DockerTypedFor(t, basetest.Options{})
	d, err := basetest.Push(context.Background(), img, host+"/distroless/base-nossl-debian13:nonroot")
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// digestRef is the REPO@sha256:... line the build printed on standard output.
func digestRef(t *testing.T, out string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if d, err := name.NewDigest(strings.TrimSpace(l)); err == nil {
			return d.String()
		}
	}
	t.Fatalf("no REPO@sha256:... in the build's output:\n%s", out)
	return ""
}

// checkOCIThroughout fails unless the pushed manifest, its config and every layer have OCI
// media types (the base is Docker-typed).
func checkOCIThroughout(t *testing.T, ref string) {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s, config %s: want OCI", m.MediaType, m.Config.MediaType)
	}
	for i, l := range m.Layers {
		if !strings.HasPrefix(string(l.MediaType), "application/vnd.oci.image.layer.") {
			t.Errorf("layer %d has media type %s on an OCI manifest", i, l.MediaType)
		}
	}
}

// layoutDigest is the digest of the image an OCI layout directory names (the manifest
// annotated with org.opencontainers.image.ref.name; the SBOM referrer beside it is not).
func layoutDigest(t *testing.T, dir string) string {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatalf("--output %s: %v", dir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, m := range im.Manifests {
		if m.Annotations["org.opencontainers.image.ref.name"] != "" {
			named = append(named, m.Digest.String())
		}
	}
	if len(named) != 1 {
		t.Fatalf("--output %s names %d images (%v), want 1", dir, len(named), named)
	}
	return named[0]
}

// daggerSmoke is step 3 on the engine: `ci smoke --engine dagger --image REF` runs every
// check of smoke.Checks on the pushed digest as a Dagger service, none skipped (HTTP/3 from
// inside the engine), with the in-engine client the engine builds itself.
func daggerSmoke(ctx context.Context, t *testing.T, ref string) {
	t.Helper()
	var sout, serr bytes.Buffer
	start := time.Now()
	code := run(ctx, []string{"smoke", "--engine", "dagger", "--image", ref, "--json", "--timeout", "30m"}, &sout, &serr)
	if code != 0 {
		t.Errorf("ci smoke --engine dagger --image %s: exit %d\n%s%s", ref, code, sout.String(), serr.String())
		return
	}
	rep, err := smoke.ReadJSON(sout.Bytes())
	if err != nil {
		t.Fatalf("ci smoke --engine dagger --json: %v\n%s", err, sout.String())
	}
	pass, fail, skip := rep.Counts()
	if pass != len(smoke.Checks()) || fail != 0 || skip != 0 {
		t.Errorf("ci smoke --engine dagger: %d passed, %d failed, %d skipped; want all %d of smoke.Checks passed", pass, fail, skip, len(smoke.Checks()))
	}
	if r, _ := rep.Result(smoke.CheckHTTP3); r.Status != smoke.Pass || !strings.Contains(r.Detail, "in the engine") {
		t.Errorf("HTTP/3 under ci smoke --engine dagger: %s %q, want PASS observed in the engine", r.Status, r.Detail)
	}
	var table strings.Builder
	rep.Print(&table)
	t.Logf("ci smoke --engine dagger --image %s (%s): %d passed, %d failed, %d skipped\n%s", ref, time.Since(start).Round(time.Second), pass, fail, skip, table.String())
}
