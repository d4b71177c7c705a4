//go:build integration

package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

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
	testenv.SharedUpstream(t)
	mirror := testenv.Mirror(t)
	needHostSmoke(t)
	reg := registrytest.Start(t)
	base, err := basetestPushDockerTyped(t, reg.Host)
	if err != nil {
		t.Fatal(err)
	}
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
