package testenv

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// buildCacheEnv names the directory the host executor caches stage outputs (and fetched
// sources, under sources/) in for tests. Every test package shares it.
const buildCacheEnv = "NGINX_FORGE_BUILD_CACHE"

// BuildCacheDir is the shared build cache of the tests.
func BuildCacheDir() string {
	if d := os.Getenv(buildCacheEnv); d != "" {
		return d
	}
	return "/var/cache/nginx-forge/build"
}

var built struct {
	sync.Mutex
	tree string
}

// BuiltTree returns the install tree (usr/sbin/nginx, etc/nginx/..., see the runtime
// contract) of the whole stack built by the host executor from the test lock's real tarballs,
// fetched and verified from the loopback mirror. The first caller on a machine compiles it
// (minutes: docs/tests.md has the times; give `go test` a -timeout of 30m); every later caller, in
// any test package or process, gets it from the shared cache (BuildCacheDir) in seconds. A
// lock per stage makes concurrent callers wait for one build instead of racing.
//
// The tree is shared: do not modify it. Copy it first (cp -a) if a test must change files.
//
// The build runs in a subprocess (./pipeline/testsupport/testenv/buildtree) so this package
// imports none of ours: the lock, source, plan and host packages' tests use testenv too.
func BuiltTree(t testing.TB) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.tree != "" {
		if _, err := os.Stat(filepath.Join(built.tree, "usr", "sbin", "nginx")); err == nil {
			return built.tree
		}
	}
	goTool := Tool(t, "go", "golang (or put Go's bin directory on PATH)")
	mirror := Mirror(t)

	cmd := exec.Command(goTool, "run", "./pipeline/testsupport/testenv/buildtree",
		"-lock", TestLockPath(), "-mirror", mirror, "-cache", BuildCacheDir())
	cmd.Dir = RepoRoot()
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	var stderr strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			t.Logf("build: %s", sc.Text())
			stderr.WriteString(sc.Text() + "\n")
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			Missing(t, "build tools for the host build", strings.TrimSpace(stderr.String()))
		}
		t.Fatalf("building the stack with the host executor (cache %s): %v\n%s", BuildCacheDir(), err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	tree := lines[len(lines)-1]
	if _, err := os.Stat(filepath.Join(tree, "usr", "sbin", "nginx")); err != nil {
		t.Fatalf("the host build reported install tree %q, which has no usr/sbin/nginx: %v", tree, err)
	}
	built.tree = tree
	return tree
}
