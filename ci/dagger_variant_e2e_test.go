//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestDaggerAWSLCVariant is the AWS-LC variant on a real Dagger engine, as a person types it:
// `ci build --tls aws-lc --zlib zlib-ng --lock <variant test lock> --push` twice (the git
// sources' archives from the loopback mirror, verified by tree; AWS-LC built with CMake in
// the builder), the same digest both times, every smoke check passed in the engine with none
// skipped, then `ci smoke --image DIGEST` under runc. Skips, saying why, without an engine.
func TestDaggerAWSLCVariant(t *testing.T) {
	needDaggerEngine(t)
	mirror, reg, base := daggerVariantE2E(t)
	repo := reg.Host + "/nginx-forge/variant"
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Minute)
	defer cancel()
	build := func(what string) string {
		t.Helper()
		args := []string{"build", "--tls", "aws-lc", "--zlib", "zlib-ng", "--lock", testenv.AWSLCTestLockPath(),
			"--mirror", mirror, "--runtime-image", base, "--push", "--image", repo, "-v"}
		var stdout, stderr bytes.Buffer
		start := time.Now()
		if code := run(ctx, args, &stdout, &stderr); code != 0 {
			t.Fatalf("%s: ci %s: exit %d\n%s", what, strings.Join(args, " "), code, stderr.String())
		}
		out := stdout.String() + stderr.String()
		ref := digestRef(t, out)
		m := smokeCounts.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("%s: no smoke count in the log:\n%s", what, stderr.String())
		}
		if pass, _ := strconv.Atoi(m[1]); pass != len(smoke.Checks()) || m[2] != "0" || m[3] != "0" {
			t.Errorf("%s: smoke in the engine %s passed, %s failed, %s skipped; want all %d passed", what, m[1], m[2], m[3], len(smoke.Checks()))
		}
		t.Logf("%s: %s in %s; log:\n%s", what, ref, time.Since(start).Round(time.Second), stderr.String())
		return ref
	}
	first := build("first variant build")
	if second := build("second variant build"); second != first {
		t.Errorf("second build pushed %s, the first %s: not reproducible", second, first)
	}
	var sout, serr bytes.Buffer
	if code := run(ctx, []string{"smoke", "--image", first}, &sout, &serr); code != 0 {
		t.Errorf("ci smoke --image %s: exit %d\n%s%s", first, code, sout.String(), serr.String())
	}
	t.Logf("ci smoke --image %s:\n%s", first, sout.String())
}

// TestDaggerAWSLCVariantPGO is the AWS-LC variant's pgo build on a real Dagger engine, as the
// update workflow records a profile and a person then builds with it: `ci pgo-profile --tls
// aws-lc --zlib zlib-ng --in-repo --write` on the engine (zlib-ng, PCRE2, AWS-LC and nginx
// instrumented and trained in containers) into a copy of the variant's test lock, then
// `ci build --tls aws-lc --zlib zlib-ng --optimize pgo --push` twice: both from the recorded
// profile alone (no training in the build), one digest, every smoke check passed in the
// engine with none skipped, and `ci smoke --image DIGEST` under runc. Skips, saying why,
// without an engine, and unless NGINX_FORGE_DAGGER_PGO_TEST=1 asks for its cost: the
// training and two builds in containers take the better part of an hour on 2 cores, more
// than the rest of .ci/test's Dagger tests together, so .ci/test leaves it to a lab run
// (docs/tests.md) while the host engine's TestAWSLCVariantPGOIsReproducible runs every time.
func TestDaggerAWSLCVariantPGO(t *testing.T) {
	needDaggerEngine(t)
	if testing.Short() || os.Getenv("NGINX_FORGE_DAGGER_PGO_TEST") != "1" {
		t.Skip("skipped: set NGINX_FORGE_DAGGER_PGO_TEST=1 to run it on a Dagger engine (it trains the AWS-LC variant in containers and builds it with PGO twice: most of an hour on 2 cores, so .ci/test does not set it)")
	}
	mirror, reg, base := daggerVariantE2E(t)
	lockFile := lockCopy(t, testenv.AWSLCTestLockPath())
	work := filepath.Dir(lockFile)
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Minute)
	defer cancel()
	variant := []string{"--tls", "aws-lc", "--zlib", "zlib-ng", "--lock", lockFile, "--mirror", mirror}

	start := time.Now()
	args := append(append([]string{"pgo-profile"}, variant...), "--dir", filepath.Join(work, "pgo"), "--in-repo", "--write")
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	t.Logf("pgo-profile on the engine: %s\n%s", time.Since(start).Round(time.Second), stderr.String())
	l, err := lock.Load(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Profiles) != 1 || l.Profiles[0].Platform != "linux/amd64" {
		t.Fatalf("the variant lock records %+v, want one linux/amd64 profile", l.Profiles)
	}
	dirs := profileDirs(t, filepath.Join(work, filepath.FromSlash(l.Profiles[0].URL)))
	for _, c := range []string{"zlib_ng", "pcre2", "aws_lc", "nginx"} {
		if dirs[c] == 0 {
			t.Errorf("the profile recorded on the engine has no counters for %s (has %v)", c, dirs)
		}
	}

	repo := reg.Host + "/nginx-forge/variant-pgo"
	var digests []string
	for i := range 2 {
		start := time.Now()
		args := append(append([]string{"build"}, variant...), "--optimize", "pgo", "--runtime-image", base, "--push", "--image", repo, "-v")
		var stdout, stderr bytes.Buffer
		if code := run(ctx, args, &stdout, &stderr); code != 0 {
			t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
		}
		out := stdout.String() + stderr.String()
		digests = append(digests, digestRef(t, out))
		t.Logf("variant pgo build %d on the engine: %s in %s; log:\n%s", i+1, digests[i], time.Since(start).Round(time.Second), stderr.String())
		if strings.Contains(out, "pgo-train") || strings.Contains(out, "not reproducible") {
			t.Errorf("variant pgo build %d trained for itself instead of using the recorded profile", i+1)
		}
		m := smokeCounts.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("variant pgo build %d: no smoke count in the log", i+1)
		}
		if pass, _ := strconv.Atoi(m[1]); pass != len(smoke.Checks()) || m[2] != "0" || m[3] != "0" {
			t.Errorf("variant pgo build %d: smoke in the engine %s passed, %s failed, %s skipped; want all %d passed", i+1, m[1], m[2], m[3], len(smoke.Checks()))
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two variant pgo builds from one lock and recorded profile pushed %s and %s: not reproducible", digests[0], digests[1])
	}
	var sout, serr bytes.Buffer
	if code := run(ctx, []string{"smoke", "--image", digests[0]}, &sout, &serr); code != 0 {
		t.Errorf("ci smoke --image %s: exit %d\n%s%s", digests[0], code, sout.String(), serr.String())
	}
	t.Logf("ci smoke --image %s:\n%s", digests[0], sout.String())
}

// daggerVariantE2E is what the variant's Dagger tests run against: the shared upstream
// tarballs' loopback mirror, a loopback registry, and the stand-in runtime base pushed to it.
// It skips, saying why, where the host cannot run the smoke tests.
func daggerVariantE2E(t *testing.T) (mirror string, reg *registrytest.Registry, base string) {
	t.Helper()
	testenv.SharedUpstream(t)
	mirror = testenv.Mirror(t)
	needHostSmoke(t)
	reg = registrytest.Start(t)
	base, err := basetestPushDockerTyped(t, reg.Host)
	if err != nil {
		t.Fatal(err)
	}
	return mirror, reg, base
}
