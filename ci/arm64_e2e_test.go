//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// needARM64 skips (fails under NGINX_FORGE_E2E=1) without what an arm64 cross build and its
// smoke run under emulation need here: the cross toolchain, the target's libcrypt, and
// qemu-aarch64 registered in binfmt_misc with the F flag (.ci/install-deps sets all up).
func needARM64(t *testing.T) {
	t.Helper()
	testenv.Tool(t, "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu")
	if err := host.EmulationReady("qemu-aarch64"); err != nil {
		testenv.Missing(t, "arm64 emulation ("+err.Error()+")", "run .ci/install-deps as root")
	}
	if _, err := os.Stat("/usr/lib/aarch64-linux-gnu/libcrypt.a"); err != nil {
		testenv.Missing(t, "libcrypt-dev:arm64 (the target's static libcrypt)", "run .ci/install-deps as root (dpkg --add-architecture arm64; apt-get install libcrypt-dev:arm64)")
	}
}

// arm64Build runs `ci build` through the command line with args and returns the pushed
// digest (stdout) and the log.
func arm64Build(ctx context.Context, t *testing.T, args ...string) (name.Digest, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	d, err := name.NewDigest(strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatalf("stdout %q is not REPO@sha256:...: %v\n%s", stdout.String(), err, stderr.String())
	}
	return d, stderr.String()
}

// checkAllSmoke: the log's smoke line for platform counts every check of the suite passed,
// none failed or skipped. The error names the checks that did not pass; the whole log is
// for logAtEnd.
func checkAllSmoke(t *testing.T, log, platform string) {
	t.Helper()
	m := regexp.MustCompile(`smoke \(` + regexp.QuoteMeta(platform) + `\): (\d+) passed, (\d+) failed, (\d+) skipped`).FindStringSubmatch(log)
	if m == nil {
		t.Errorf("no smoke line for %s in the log", platform)
		return
	}
	if pass, _ := strconv.Atoi(m[1]); pass != len(smoke.Checks()) || m[2] != "0" || m[3] != "0" {
		t.Errorf("smoke (%s): %s passed, %s failed, %s skipped; want all %d passed, none skipped:\n%s", platform, m[1], m[2], m[3], len(smoke.Checks()), smokeNotPassed(log))
	}
}

// smokeNotPassed is the rows of a smoke table (in a build log or ci smoke's output) whose
// result is not PASS: what a failure message names first.
func smokeNotPassed(out string) string {
	var rows []string
	for _, l := range strings.Split(out, "\n") {
		if smokeRowNotPassed.MatchString(l) {
			rows = append(rows, strings.TrimSpace(l))
		}
	}
	if rows == nil {
		return "(no FAIL or SKIP row)"
	}
	return strings.Join(rows, "\n")
}

var smokeRowNotPassed = regexp.MustCompile(`\s{2,}(FAIL|SKIP)\s{2,}`)

// logAtEnd logs a command's whole output when the test ends, after its errors: a failure's
// own message then comes first in go test's output, not after hundreds of log lines.
func logAtEnd(t *testing.T, title, out string) {
	t.Helper()
	t.Cleanup(func() { t.Logf("%s:\n%s", title, out) })
}

// checkAArch64 reads nginx from an image and checks its ELF machine.
func checkAArch64(t *testing.T, d name.Digest) {
	t.Helper()
	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "arm64" || cf.Variant != "v8" || cf.OS != "linux" {
		t.Errorf("image %s is %s/%s/%s, want linux/arm64/v8", d, cf.OS, cf.Architecture, cf.Variant)
	}
	bin := filepath.Join(t.TempDir(), "nginx")
	if err := extractFile(img, "usr/sbin/nginx", bin); err != nil {
		t.Fatal(err)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != elf.EM_AARCH64 {
		t.Errorf("nginx in %s is %s, want EM_AARCH64", d, f.Machine)
	}
}

// TestARM64CrossBuildEndToEnd is issue 37 on this amd64 machine, as a person types it:
// `ci build --engine host --platform linux/arm64` cross-compiles the test lock's stack
// (zlib, PCRE2, OpenSSL, brotli, nginx with its configure tests run through qemu), assembles
// it on the arm64 stand-in base (Debian trixie's arm64 packages), smoke-tests it under runc
// with qemu (every check, none skipped: the binary's ELF machine and arm64 flags included),
// pushes it, and writes the tarball; `ci smoke --image docker-archive:FILE.tar` passes; a
// second build gives the same digest.
func TestARM64CrossBuildEndToEnd(t *testing.T) {
	mirror := testenv.MirrorDir(t)
	needHostSmoke(t)
	needARM64(t)
	reg := registrytest.Start(t)
	base := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13-arm64", basetest.Options{Arch: "arm64"})
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()
	repo := reg.Host + "/nginx-forge/arm64"
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	args := func(output string) []string {
		return []string{"build", "--engine", "host", "--platform", "linux/arm64", "--lock", testLockPath,
			"--mirror", srv.URL, "--cache", testenv.BuildCacheDir(), "--runtime-image", base.String(),
			"--push", "--image", repo, "--revision", "0123456789abcdef0123456789abcdef01234567", "--output", output, "-v"}
	}
	tarFile := filepath.Join(dir, "x.tar")
	d, log := arm64Build(ctx, t, args(tarFile)...)
	logAtEnd(t, "arm64 build", log)
	checkAllSmoke(t, log, "linux/arm64")
	for _, want := range []string{"openssl (linux/arm64): done in", "binary: architecture", "EM_AARCH64", "-mbranch-protection=standard"} {
		if !strings.Contains(log, want) {
			t.Errorf("the build log lacks %q", want)
		}
	}
	checkAArch64(t, d)

	// The acceptance command: the tarball, smoke-tested again through ci smoke's flags.
	ref := "docker-archive:" + tarFile
	var sout, serr bytes.Buffer
	code := run(ctx, []string{"smoke", "--image", ref}, &sout, &serr)
	if smokeOut := sout.String() + serr.String(); code != 0 {
		t.Errorf("ci smoke --image %s: exit %d; not passed:\n%s", ref, code, smokeNotPassed(smokeOut))
		logAtEnd(t, "ci smoke --image "+ref, smokeOut)
	} else if !regexp.MustCompile(`(?m)^` + strconv.Itoa(len(smoke.Checks())) + ` passed, 0 failed, 0 skipped`).MatchString(smokeOut) {
		t.Errorf("ci smoke --image %s did not pass every check:\n%s", ref, smokeNotPassed(smokeOut))
		logAtEnd(t, "ci smoke --image "+ref, smokeOut)
	}

	// Two builds, one digest: the second without pushing or smoke-testing (the image is
	// the same or the comparison fails), its tarball's image against the pushed one.
	againFile := filepath.Join(dir, "again.tar")
	var aout, aerr bytes.Buffer
	againArgs := []string{"build", "--engine", "host", "--platform", "linux/arm64", "--lock", testLockPath,
		"--mirror", srv.URL, "--cache", testenv.BuildCacheDir(), "--runtime-image", base.String(),
		"--revision", "0123456789abcdef0123456789abcdef01234567", "--no-smoke", "--output", againFile}
	if code := run(ctx, againArgs, &aout, &aerr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(againArgs, " "), code, aerr.String())
	}
	// A docker-archive tarball keeps the image's config and layers but not its manifest
	// (reading it back makes a Docker schema 2 manifest), so the tarballs are compared with
	// each other by digest, and with the pushed image by config digest (which names the
	// layers' digests and the whole configuration).
	pushed, err := remote.Image(d)
	if err != nil {
		t.Fatalf("pulling %s: %v", d, err)
	}
	wantConfig, err := pushed.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	var digests []string
	for _, f := range []string{tarFile, againFile} {
		img, err := tarball.ImageFromPath(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		digests = append(digests, got.String())
		cfg, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		if cfg != wantConfig {
			t.Errorf("%s holds the config %s, the pushed arm64 image %s has %s: two builds, two images", f, cfg, d, wantConfig)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two arm64 builds, two digests: %s and %s", digests[0], digests[1])
	}
	t.Logf("two arm64 builds, one image: tarball digest %s, config %s, pushed as %s", digests[0], wantConfig, d)
}

// extractFile writes the file at path (no leading slash) of img's flattened filesystem to dst.
func extractFile(img v1.Image, path, dst string) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("%s is not in the image", path)
		}
		if err != nil {
			return err
		}
		if strings.TrimPrefix(h.Name, "./") != path {
			continue
		}
		f, err := os.Create(dst)
		if err != nil {
			return err
		}
		if _, err := io.Copy(f, tr); err != nil {
			f.Close()
			return err
		}
		return f.Close()
	}
}

// TestARM64AWSLCVariantCrossBuild is the AWS-LC variant cross-compiled for arm64 (AWS-LC
// through CMake's cross mode, zlib-ng through its CHOST, nginx 1.30.4 from its git tree),
// through the command line: the install tree's nginx is an AArch64 ELF, and running it
// through qemu prints AWS-LC's version and the arm64 flags. A build and a check of the
// binary, not the full smoke suite: TestARM64CrossBuildEndToEnd runs that under emulation
// for the default stack, and the variant's own smoke run is TestAWSLCVariantEndToEnd's.
func TestARM64AWSLCVariantCrossBuild(t *testing.T) {
	testenv.SharedUpstream(t)
	mirror := testenv.MirrorDir(t)
	if _, err := os.Stat(filepath.Join(mirror, "aws-lc-5.5.0-git.tar.gz")); err != nil {
		testenv.Missing(t, "aws-lc-5.5.0-git.tar.gz in the mirror", "run .ci/fetch-sources again (it copies ../shared/upstream's archives)")
	}
	testenv.Tool(t, "cmake", "cmake")
	needARM64(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(mirror)))
	defer srv.Close()
	tree := filepath.Join(t.TempDir(), "tree")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Minute)
	defer cancel()
	args := []string{"build", "--engine", "host", "--platform", "linux/arm64", "--tls", "aws-lc", "--zlib", "zlib-ng",
		"--lock", testenv.AWSLCTestLockPath(), "--mirror", srv.URL, "--cache", testenv.BuildCacheDir(), "--no-smoke", "--tree", tree}
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	bin := filepath.Join(tree, "usr", "sbin", "nginx")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	machine := f.Machine
	f.Close()
	if machine != elf.EM_AARCH64 {
		t.Fatalf("nginx is %s, want EM_AARCH64", machine)
	}
	cmd := exec.CommandContext(ctx, bin, "-V")
	cmd.Env = append(os.Environ(), "QEMU_LD_PREFIX=/usr/aarch64-linux-gnu")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("nginx -V under qemu: %v\n%s", err, out)
	}
	for _, want := range []string{"nginx/1.30.4", "AWS-LC 5.5.0", "-march=armv8.2-a", "-mbranch-protection=standard"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("nginx -V lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(string(out), "-fcf-protection") {
		t.Errorf("nginx -V shows the x86-only -fcf-protection:\n%s", out)
	}
}
