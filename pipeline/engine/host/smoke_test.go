//go:build integration

package host_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// realImage is the image the pipeline ships, made from its real parts: the stand-in
// distroless base (Debian trixie packages), the install tree built by the host executor
// from the test lock's tarballs, assembled by pipeline/image.
func realImage(t *testing.T, base basetest.Options) (v1.Image, *lock.Lock) {
	t.Helper()
	testenv.Root(t)
	testenv.Tool(t, "runc", "runc")
	testenv.Tool(t, "umoci", "umoci")
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := basetest.For(t, base)
	tree := testenv.BuiltTree(t)
	img, err := image.Assemble(b, tree, l, image.WithBaseRef(basetest.Name))
	if err != nil {
		t.Fatalf("assembling the image: %v", err)
	}
	return img, l
}

// expect is what the test lock and the default module set promise.
func expect(t *testing.T, l *lock.Lock) smoke.Expect {
	t.Helper()
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	e := smoke.Expect{Modules: []string{}}
	for _, name := range p.Modules {
		for _, m := range plan.Modules {
			if m.Name == name {
				e.Modules = append(e.Modules, m.Flag)
			}
		}
	}
	for _, c := range []struct {
		name string
		dst  *string
	}{{lock.Nginx, &e.Nginx}, {lock.OpenSSL, &e.OpenSSL}, {lock.PCRE2, &e.PCRE2}} {
		comp, ok := l.Component(c.name)
		if !ok {
			t.Fatalf("test lock has no %s", c.name)
		}
		*c.dst = comp.Version
	}
	return e
}

func table(t *testing.T, rep smoke.Report) string {
	t.Helper()
	var sb strings.Builder
	if err := rep.Print(&sb); err != nil {
		t.Fatal(err)
	}
	return sb.String()
}

// The runc runner's tests: the real image (stand-in base, install tree built from the test
// lock) run in runc by SmokeImage, the way `ci smoke --image` and the host engine run it.

// TestShippedImagePasses is the acceptance path: push the real image to the real
// registry, pull it back by digest (as `ci smoke --image` and the build's verify step do),
// run it in runc and pass every check, none skipped.
func TestShippedImagePasses(t *testing.T) {
	img, l := realImage(t, basetest.Options{})
	reg := registrytest.Start(t)
	ref := reg.Ref("nginx-forge/smoke:test")
	if _, err := basetest.Push(context.Background(), img, ref); err != nil {
		t.Fatal(err)
	}
	want, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	byDigest := reg.Ref("nginx-forge/smoke@" + want.String())
	pulled, err := remote.Image(mustRef(t, byDigest), remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	got, err := pulled.Digest()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := host.SmokeImage(ctx, pulled, smoke.Options{Expect: expect(t, l), Progress: testenv.Progress(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s\n%s", byDigest, table(t, rep))
	if got != want {
		t.Errorf("ran image %s, pushed %s", got, want)
	}
	if err := rep.Err(); err != nil {
		t.Error(err)
	}
	for _, r := range rep.Results {
		if r.Status == smoke.Skip {
			t.Errorf("check %q was skipped (%s): the shipped image must be checked in full", r.Name, r.Detail)
		}
	}
}

// TestBrokenServerBlockFails: a conf.d file nginx refuses fails the suite, and the table
// names "nginx -t" with nginx's own message (which names the file).
func TestBrokenServerBlockFails(t *testing.T) {
	img, l := realImage(t, basetest.Options{})
	confD := t.TempDir()
	os.Chmod(confD, 0o755)
	if err := os.WriteFile(filepath.Join(confD, "broken.conf"), []byte("server {\n    listen 8080;\n    this_is_not_a_directive on;\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rep, err := host.SmokeImage(ctx, img, smoke.Options{Expect: expect(t, l), Progress: testenv.Progress(t), StartTimeout: 10 * time.Second},
		host.WithSmokeConfD(confD))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", table(t, rep))
	if rep.OK() {
		t.Fatal("the suite passed with a broken conf.d file")
	}
	res, _ := rep.Result(smoke.CheckConfig)
	if res.Status != smoke.Fail || !strings.Contains(res.Detail, "this_is_not_a_directive") || !strings.Contains(res.Detail, "broken.conf") {
		t.Errorf("%s: %s %q, want a failure quoting nginx's message about broken.conf", smoke.CheckConfig, res.Status, res.Detail)
	}
	if !strings.Contains(rep.Err().Error(), smoke.CheckConfig) {
		t.Errorf("error %q does not name %q", rep.Err(), smoke.CheckConfig)
	}
	if res, _ := rep.Result(smoke.CheckHTTP); res.Status != smoke.Fail || !strings.Contains(res.Detail, "exited with status 1") {
		t.Errorf("%s: %s %q, want a failure saying nginx exited", smoke.CheckHTTP, res.Status, res.Detail)
	}
	// The static checks do not depend on the config.
	for _, name := range []string{smoke.CheckPIE, smoke.CheckDynamicNeeds, smoke.CheckNoShell} {
		if res, _ := rep.Result(name); res.Status != smoke.Pass {
			t.Errorf("%s: %s %s", name, res.Status, res.Detail)
		}
	}
}

// TestBaseWithoutLibcMovesNoTag: an image on a base without glibc, published with the
// host engine's smoke test as the verify step (the digest pulled back and smoke-tested, as
// the build's verify step does), fails at "verify" naming "dynamic needs" (the missing
// libc.so.6 and loader), and the tag keeps pointing at the good image.
func TestBaseWithoutLibcMovesNoTag(t *testing.T) {
	good, l := realImage(t, basetest.Options{})
	bad, _ := realImage(t, basetest.Options{NoLibc: true})
	reg := registrytest.Start(t)
	repo := reg.Ref("nginx-forge/nginx")
	goodRef, err := basetest.Push(context.Background(), good, repo+":1.26.3")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := plan.New(l)
	if err != nil {
		t.Fatal(err)
	}
	var tableOut strings.Builder
	verify := func(ctx context.Context, ref name.Digest) error {
		pushed, err := remote.Image(ref, remote.WithContext(ctx))
		if err != nil {
			return err
		}
		rep, err := host.NewEngine().Smoke(ctx, p, pushed, smoke.Options{Expect: expect(t, l), Progress: testenv.Progress(t), StartTimeout: 10 * time.Second})
		if err != nil {
			return err
		}
		if err := rep.Print(&tableOut); err != nil {
			return err
		}
		return rep.Err()
	}
	_, err = image.Publish(ctx, bad, repo, []string{"1.26.3"}, image.WithVerify(verify))
	t.Logf("\n%s", tableOut.String())
	var pe *image.PublishError
	if !errors.As(err, &pe) || pe.Step != image.StepVerify || len(pe.Moved) != 0 {
		t.Fatalf("publishing the libc-less image: %v, want a *PublishError at step verify with no tag moved", err)
	}
	if !strings.Contains(err.Error(), smoke.CheckDynamicNeeds) {
		t.Errorf("error %q does not name %q", err, smoke.CheckDynamicNeeds)
	}
	for _, want := range []string{"libc.so.6: not found", "interpreter /lib64/ld-linux-x86-64.so.2"} {
		if !strings.Contains(tableOut.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
	desc, err := remote.Head(mustRef(t, repo+":1.26.3"))
	if err != nil {
		t.Fatal(err)
	}
	if desc.Digest.String() != goodRef.DigestStr() {
		t.Errorf("tag 1.26.3 moved to %s, want it still at %s", desc.Digest, goodRef.DigestStr())
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCISmokeCommand is the command users and CI run: `go run ./ci smoke --image REF`
// against the real registry; it prints the table and exits 0, or 1 naming the failed
// checks (here with a broken server block mounted with --conf-d).
func TestCISmokeCommand(t *testing.T) {
	img, _ := realImage(t, basetest.Options{})
	goTool := testenv.Tool(t, "go", "golang")
	reg := registrytest.Start(t)
	d, err := basetest.Push(context.Background(), img, reg.Ref("nginx-forge/nginx:smoke"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "ci")
	build := exec.Command(goTool, "build", "-o", bin, "./ci")
	build.Dir = testenv.RepoRoot()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./ci: %v\n%s", err, out)
	}
	ciSmoke := func(args ...string) (int, string, string) {
		var stdout, stderr strings.Builder
		cmd := exec.Command(bin, append([]string{"smoke", "--image", d.String()}, args...)...)
		cmd.Dir = testenv.RepoRoot()
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		t.Logf("ci smoke %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		return code, stdout.String(), stderr.String()
	}

	code, stdout, _ := ciSmoke("--expect-lock", testenv.TestLockPath())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	tl, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	versions := fmt.Sprintf("nginx %s, OpenSSL %s, PCRE2 %s", tl.MustComponent(lock.Nginx).Version, tl.MustComponent(lock.OpenSSL).Version, tl.MustComponent(lock.PCRE2).Version)
	for _, want := range []string{d.DigestStr(), "CHECK", smoke.CheckHTTP3, versions, "0 failed, 0 skipped"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}

	confD := t.TempDir()
	os.Chmod(confD, 0o755)
	if err := os.WriteFile(filepath.Join(confD, "site.conf"), []byte("server { listen 8080; locaton / { } }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := ciSmoke("--conf-d", confD)
	if code != 1 || !strings.Contains(stderr, "smoke checks failed: ") || !strings.Contains(stderr, smoke.CheckConfig) {
		t.Errorf("broken conf.d: exit %d, stderr %q; want 1 naming %q", code, stderr, smoke.CheckConfig)
	}
	if !strings.Contains(stdout, `unknown directive "locaton"`) {
		t.Errorf("table lacks nginx's message:\n%s", stdout)
	}
}
