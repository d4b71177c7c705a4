package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func runSmokeCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"smoke"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The command's end-to-end path (pull, runc, checks, table, exit status) is smoke.Ref,
// tested on the real image in pipeline/smoke (ci may not import the test environment).

var testLock = filepath.Join("..", "pipeline", "lock", "testdata", "trixie.lock.json")

func TestSmokeFlags(t *testing.T) {
	if code, _, stderr := runSmokeCmd(t); code != 2 || !strings.Contains(stderr, "--image is required") {
		t.Errorf("no --image: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runSmokeCmd(t, "--image", "x", "--modules", "http_ssl,bogus"); code != 2 || !strings.Contains(stderr, `unknown nginx module "bogus"`) {
		t.Errorf("bad --modules: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr := runSmokeCmd(t, "--image", "x", "--expect-lock", "/nonexistent.json"); code != 2 || !strings.Contains(stderr, "/nonexistent.json") {
		t.Errorf("bad --expect-lock: exit %d, stderr %q", code, stderr)
	}
	e, err := smokeExpect(testLock, "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Nginx != "1.26.3" || e.OpenSSL != "3.5.7" || e.PCRE2 != "10.46" {
		t.Errorf("expectations from the test lock: %+v", e)
	}
	var v3 bool
	for _, m := range e.Modules {
		v3 = v3 || m == "--with-http_v3_module"
	}
	if !v3 {
		t.Errorf("default modules lack --with-http_v3_module: %q", e.Modules)
	}
	if e, _ := smokeExpect("", "any"); e.Modules != nil {
		t.Errorf("--modules any still compares modules: %q", e.Modules)
	}
}
