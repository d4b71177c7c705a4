// Package testenv gives tests the real parts this machine has: the upstream tarballs laid
// out as a mirror by .ci/fetch-sources, the test lock that pins them, tools installed by
// .ci/install-deps, and the Debian mirror its apt sources name (DebianMirror). A missing part
// skips the test with the reason and the fix, except under NGINX_FORGE_E2E=1 (set by
// .ci/test), where a missing part fails it: CI must not go green by skipping the end-to-end
// tests.
package testenv

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"golang.org/x/mod/modfile"
)

// upstreamDirEnv names the directory .ci/fetch-sources filled (it holds mirror/ and debian/).
const upstreamDirEnv = "NGINX_FORGE_UPSTREAM"

// E2E reports whether missing real parts are failures rather than skips.
func E2E() bool { return os.Getenv("NGINX_FORGE_E2E") == "1" }

// Missing skips (or, under NGINX_FORGE_E2E=1, fails) the test, saying what is missing and how
// to get it.
func Missing(t testing.TB, what, fix string) {
	t.Helper()
	if E2E() {
		t.Fatalf("%s is missing (NGINX_FORGE_E2E=1 makes this a failure): %s", what, fix)
	}
	t.Skipf("skipped: %s is missing: %s", what, fix)
}

// RepoRoot is the checkout's top directory.
func RepoRoot() string {
	return repoRoot
}

// repoRoot is found when the test binary starts, before any test changes its working
// directory: from this file's path, or, in a binary built with -trimpath (the workflows'
// GOFLAGS), where that path is the import path, from the working directory go test gives a
// test binary (its package's directory) up to the module's go.mod.
var repoRoot = findRepoRoot()

func findRepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	if filepath.IsAbs(file) {
		return filepath.Clean(filepath.Join(filepath.Dir(file), "..", "..", ".."))
	}
	dir, err := os.Getwd()
	if err != nil {
		panic(fmt.Sprintf("testenv: the checkout's top directory: %v", err))
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && modfile.ModulePath(data) == module {
			return d
		}
		if filepath.Dir(d) == d {
			panic(fmt.Sprintf("testenv: no go.mod of %s in %s or above it", module, dir))
		}
	}
}

// module is this repository's module path (go.mod).
const module = "github.com/nginx-forge/nginx-forge"

// TestLockPath is the shipped default lock's test twin: the lock the tests build, smoke-test
// and publish in its place. It pins the shipped lock's bytes wherever this machine reaches
// them (the mirror that .ci/fetch-sources lays out) and stand-ins elsewhere, each listed with
// its reason in pipeline/lock's TestShippedLocksAndTheirTwins.
func TestLockPath() string {
	return filepath.Join(RepoRoot(), "pipeline", "lock", "testdata", "stack.twin.lock.json")
}

// TrixieLockPath is a lock of Debian trixie's releases as tarballs (nginx 1.26.3, OpenSSL
// 3.5.7, PCRE2 10.46, zlib 1.3.1, and the optional components): one release behind what the
// update scenarios offer, and every source a signed or checksummed tarball. Tests that need
// such a lock as data (the update replay, the parser) use it; it is never the shipped stack.
func TrixieLockPath() string {
	return filepath.Join(RepoRoot(), "pipeline", "lock", "testdata", "trixie.lock.json")
}

// MirrorDir returns the directory of upstream files under their upstream names.
func MirrorDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(upstreamDirEnv)
	if dir == "" {
		dir = "/var/cache/nginx-forge/upstream"
	}
	m := filepath.Join(dir, "mirror")
	if _, err := os.Stat(filepath.Join(m, "nginx-1.26.3.tar.gz")); err != nil {
		Missing(t, "the upstream tarballs mirror "+m, "run `.ci/fetch-sources "+dir+"` as root (or set "+upstreamDirEnv+")")
	}
	return m
}

// Mirror serves MirrorDir on a loopback HTTP server for the test's lifetime and returns its URL.
func Mirror(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(http.FileServer(http.Dir(MirrorDir(t))))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Tool returns the path of a command, or skips/fails naming the package that provides it.
func Tool(t testing.TB, command, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(command)
	if err != nil {
		Missing(t, "the command "+command, "apt-get install "+pkg+" (or run .ci/install-deps)")
	}
	return p
}

// Root skips/fails unless the test runs as root (runc, network namespaces).
func Root(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Missing(t, "root", "run the tests as root (runc and network namespaces need it)")
	}
}

// sharedUpstreamEnv names the directory of upstream archives that no Debian package carries
// (default ../shared/upstream beside the checkout; its README says what each file is).
const sharedUpstreamEnv = "NGINX_FORGE_SHARED_UPSTREAM"

// SharedUpstream returns that directory, or skips/fails when it is missing.
func SharedUpstream(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(sharedUpstreamEnv)
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "..", "shared", "upstream")
	}
	if _, err := os.Stat(filepath.Join(dir, "aws-lc-5.5.0.tar.gz")); err != nil {
		Missing(t, "the upstream archives "+dir, "set "+sharedUpstreamEnv+" to the directory holding aws-lc-5.5.0.tar.gz, zlib-ng-2.2.2.tar.gz and nginx-1.30.4-git.tar.gz")
	}
	return dir
}

// AWSLCTestLockPath is the AWS-LC variant's test lock: the trees of SharedUpstream's archives
// (laid into the mirror by .ci/fetch-sources) and the test lock's PCRE2.
func AWSLCTestLockPath() string {
	return filepath.Join(RepoRoot(), "pipeline", "lock", "testdata", "aws-lc.twin.lock.json")
}

// CosignIn runs the real cosign (the binary at cosign) in dir, which is also its HOME (keys
// and TUF state stay there), and returns its combined output. Whatever it would fetch from
// the internet (a TUF root, Rekor) goes to a closed loopback port: only the registry on
// 127.0.0.1 is reached.
func CosignIn(ctx context.Context, cosign, dir string) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, cosign, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "HOME="+dir, "TUF_ROOT="+filepath.Join(dir, "tuf"),
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=127.0.0.1,localhost")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
}
