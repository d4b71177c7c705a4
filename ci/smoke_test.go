package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func runSmokeCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), append([]string{"smoke"}, args...), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// The command's end-to-end path (pull, runc, checks, table, exit status) is
// host.SmokeImage, tested on the real image in pipeline/engine/host (ci may not import the
// test environment).

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
	// Where the image runs: checked before anything is pulled (no registry named x exists).
	if code, _, stderr := runSmokeCmd(t, "--image", "x", "--engine", "docker"); code != 2 || !strings.Contains(stderr, `invalid value "docker" for flag -engine: use dagger or host`) {
		t.Errorf("bad --engine: exit %d, stderr %q", code, stderr)
	}
	for _, hostOnly := range [][]string{{"--conf-d", "."}, {"--no-tls"}} {
		args := append([]string{"--image", "x", "--engine", "dagger"}, hostOnly...)
		if code, _, stderr := runSmokeCmd(t, args...); code != 2 || !strings.Contains(stderr, "apply to --engine host") {
			t.Errorf("%q: exit %d, stderr %q, want a usage error", args, code, stderr)
		}
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

// ci smoke --image takes its expectations from the image's record; --expect-lock and
// --modules only add to it (issue 21: an image built from the test lock, with ngx_brotli,
// failed "nginx -V modules" and "brotli" without --expect-lock).
func TestSmokeExpectationsFromTheImage(t *testing.T) {
	recorded := mutate.Annotations(empty.Image, map[string]string{
		image.AnnotationPrefix + "nginx.version":   "1.26.3",
		image.AnnotationPrefix + "openssl.version": "3.5.7",
		image.AnnotationPrefix + "pcre2.version":   "10.46",
		image.AnnotationModules:                    "http_ssl,http_v3,brotli",
	}).(v1.Image)
	wantMods := []string{"--with-http_ssl_module", "--with-http_v3_module", smoke.BrotliModuleFlag}

	e, from, err := imageExpect(recorded, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if e.Nginx != "1.26.3" || e.OpenSSL != "3.5.7" || e.PCRE2 != "10.46" || !slices.Equal(e.Modules, wantMods) || from != "the image's record" {
		t.Errorf("without flags: %+v from %q; want the record's versions and modules %q", e, from, wantMods)
	}

	// --expect-lock: the lock's versions (the default lock's differ from the record: nginx -V
	// must then match the lock, and fails); the modules stay the record's.
	defaultLock := filepath.Join("..", lock.DefaultPath)
	e, from, _ = imageExpect(recorded, defaultLock, "")
	def := lock.Default()
	ng, _ := def.Component(lock.Nginx)
	if e.Nginx != ng.Version || !slices.Equal(e.Modules, wantMods) || !strings.Contains(from, "versions compared with") {
		t.Errorf("--expect-lock: %+v from %q; want nginx %s and the record's modules", e, from, ng.Version)
	}

	// --modules replaces the record's modules; "any" compares none.
	if e, _, _ := imageExpect(recorded, "", "http_ssl"); !slices.Equal(e.Modules, []string{"--with-http_ssl_module"}) || e.Nginx != "1.26.3" {
		t.Errorf("--modules http_ssl: %+v", e)
	}
	if e, _, _ := imageExpect(recorded, "", "any"); e.Modules != nil {
		t.Errorf("--modules any: %+v", e)
	}

	// An image that records nothing is checked as before: the flags' expectations.
	e, from, _ = imageExpect(empty.Image, "", "")
	if e.Nginx != "" || slices.Contains(e.Modules, smoke.BrotliModuleFlag) || !strings.Contains(from, "records no build") {
		t.Errorf("no record: %+v from %q", e, from)
	}

	// A module this version does not know: an error naming it and the way out.
	unknown := mutate.Annotations(empty.Image, map[string]string{
		image.AnnotationPrefix + "nginx.version": "1.26.3", image.AnnotationModules: "http_ssl,teleport",
	}).(v1.Image)
	if _, _, err := imageExpect(unknown, "", ""); err == nil || !strings.Contains(err.Error(), `"teleport"`) || !strings.Contains(err.Error(), "--modules") {
		t.Errorf("unknown recorded module: %v", err)
	}
}
