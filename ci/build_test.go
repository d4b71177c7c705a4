package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/daggerexec"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

var testLockPath = testenv.TestLockPath()

// trixieLockPath is a lock of Debian trixie's releases as tarballs (testenv.TrixieLockPath):
// the fixture of the message and validation tests, which name its files and versions.
var trixieLockPath = testenv.TrixieLockPath()

// The build command must stop before anything is built or created when its inputs are bad.

func TestBuildMalformedLockCreatesNothing(t *testing.T) {
	dir := t.TempDir()
	lockFile := filepath.Join(dir, "bad.lock.json")
	b, err := os.ReadFile(testLockPath)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(b), `"version": "1.3.1"`, `"version": "1.3.1", "versoin": "x"`, 1)
	if err := os.WriteFile(lockFile, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, cache := filepath.Join(dir, "tree"), filepath.Join(dir, "cache")
	var stderr bytes.Buffer
	err = runBuild(context.Background(), buildFlags{engine: "host", tree: out, lockFile: lockFile, platform: mustPlatforms("linux/amd64"), cache: cache}, io.Discard, &stderr)
	if err == nil {
		t.Fatal("a malformed lock was accepted")
	}
	for _, want := range []string{lockFile, "versoin", "nothing was built"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	for _, d := range []string{out, cache} {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created: %v", d, err)
		}
	}
}

func TestBuildUsageErrors(t *testing.T) {
	dir := t.TempDir()
	full := filepath.Join(dir, "full")
	os.MkdirAll(filepath.Join(full, "x"), 0o755)
	for _, tc := range []struct {
		name string
		f    buildFlags
		want string
	}{
		{"tree not empty", buildFlags{engine: "host", platform: mustPlatforms("linux/amd64"), tree: full}, "is not empty"},
		{"output exists", buildFlags{engine: "host", platform: mustPlatforms("linux/amd64"), output: full}, "exists: choose a new path"},
		{"push without image", buildFlags{engine: "host", push: true}, "--push needs --image"},
		{"push without smoke", buildFlags{engine: "host", push: true, image: "127.0.0.1:5000/x", noSmoke: true}, "always smoke-tested"},
		{"digest-only without push", buildFlags{engine: "host", digestOnly: true}, "only makes sense with --push"},
		{"digest-only with tags", buildFlags{engine: "host", push: true, digestOnly: true, image: "127.0.0.1:5000/x:1"}, "moves no tag"},
		{"latest with tags", buildFlags{engine: "host", push: true, latest: true, image: "127.0.0.1:5000/x:1"}, "add latest there"},
		{"bad image", buildFlags{engine: "host", image: "UPPER/Case"}, `parsing repository "UPPER/Case"`},
		{"bad tag", buildFlags{engine: "host", image: "r.example/x:ok,b@d"}, `tag "b@d" is not a valid tag`},
		{"bundle without tree", buildFlags{engine: "host", bundle: true, output: filepath.Join(dir, "o")}, "--bundle needs --tree"},
		{"builder image on host", buildFlags{engine: "host", builderImage: "ubuntu:24.04"}, "--builder-image applies to --engine dagger"},
		{"runtime image", buildFlags{engine: "host", tree: filepath.Join(dir, "o"), lockFile: testLockPath, platform: mustPlatforms("linux/amd64"), runtimeImage: "::bad"}, `--runtime-image "::bad"`},
		{"host multi-platform", buildFlags{engine: "host", platform: mustPlatforms("linux/amd64,linux/arm64")}, "the host engine builds for this machine only"},
		{"output multi-platform", buildFlags{engine: "dagger", platform: mustPlatforms("linux/amd64,linux/arm64"), output: filepath.Join(dir, "o.tar")}, "--output and --tree take one platform"},
		{"cpu", buildFlags{engine: "host", tree: filepath.Join(dir, "o"), lockFile: testLockPath, platform: mustPlatforms("linux/amd64"), cpu: "pentium"}, `CPU level "pentium" is not known`},
		{"module", buildFlags{engine: "host", tree: filepath.Join(dir, "o"), lockFile: testLockPath, platform: mustPlatforms("linux/amd64"), modules: "http_ssl,gopher"}, `unknown nginx module "gopher"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := runBuild(context.Background(), tc.f, io.Discard, io.Discard)
			if err == nil || !isUsage(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want a usage error containing %q", err, tc.want)
			}
		})
	}
}

// TestBuildWithoutEngineFailsFirst: the default `ci build` (Dagger) on a machine without an
// engine fails with the engine error before it fetches a source or creates an output.
func TestBuildWithoutEngineFailsFirst(t *testing.T) {
	for _, v := range []string{"DAGGER_SESSION_PORT", "_EXPERIMENTAL_DAGGER_RUNNER_HOST", "_EXPERIMENTAL_DAGGER_CLI_BIN", "DAGGER_SESSION_TOKEN"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	t.Setenv("PATH", t.TempDir()) // no docker, podman or dagger CLI
	dir := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg"))
	out := filepath.Join(dir, "nginx.tar")
	err := runBuild(context.Background(), buildFlags{engine: "dagger", lockFile: testLockPath, platform: mustPlatforms("linux/amd64"),
		mirror: "http://127.0.0.1:9/never-contacted", output: out, image: "127.0.0.1:5000/nginx-forge/nginx:test", push: true}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "no Dagger engine") || !strings.Contains(err.Error(), "--engine host") {
		t.Fatalf("err = %v, want the no-engine error suggesting --engine host", err)
	}
	// The chain keeps both what failed (the preflight, exit status 2: a flag or an install
	// fixes it) and why (the engine's own error, for callers that branch on it).
	if pe := new(forge.PreflightError); !errors.As(err, &pe) || !errors.Is(err, daggerexec.ErrNoEngine) {
		t.Errorf("err = %v: want a *forge.PreflightError wrapping daggerexec.ErrNoEngine", err)
	}
	var stderr strings.Builder
	if code := run(context.Background(), []string{"build", "--lock", testLockPath, "--mirror", "http://127.0.0.1:9/never-contacted", "--no-smoke", "--output", out}, io.Discard, &stderr); code != 2 {
		t.Errorf("ci build without an engine exited %d, want 2: %s", code, stderr.String())
	}
	for _, p := range []string{out, filepath.Join(dir, "xdg")} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a build that could not start: %v", p, err)
		}
	}
}

// TestBuildNamesTheMissingEngineBeforeTheRegistry: a machine where a container runtime works
// but no Dagger engine can be started (here: the dagger CLI the SDK is told to use is not
// there), and the runtime image's registry is out of reach. `ci build` as typed says that
// there is no engine and that --engine host is the way out, not that the base could not be
// pulled: the engine is asked before the base is pulled.
func TestBuildNamesTheMissingEngineBeforeTheRegistry(t *testing.T) {
	for _, v := range []string{"DAGGER_SESSION_PORT", "_EXPERIMENTAL_DAGGER_RUNNER_HOST", "DAGGER_SESSION_TOKEN"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	works := false
	for _, rt := range []string{"docker", "podman", "nerdctl"} {
		if exec.Command(rt, "info").Run() == nil {
			works = true
			break
		}
	}
	if !works {
		t.Skip("no container runtime answers `info` here, so the preflight already stops at the engine (TestBuildWithoutEngineFailsFirst); this test needs one that works")
	}
	dir := t.TempDir()
	t.Setenv("_EXPERIMENTAL_DAGGER_CLI_BIN", filepath.Join(dir, "no-dagger-cli"))
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "xdg"))
	// A registry that is not there: a closed loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	var stderr strings.Builder
	code := run(context.Background(), []string{"build", "--lock", testLockPath, "--runtime-image", closed + "/distroless/base:nonroot",
		"--mirror", "http://127.0.0.1:9/never-contacted", "--no-smoke", "--output", filepath.Join(dir, "nginx.tar")}, io.Discard, &stderr)
	msg := stderr.String()
	if code != 2 || !strings.Contains(msg, "no Dagger engine") || !strings.Contains(msg, "--engine host") || strings.Contains(msg, "pulling the runtime image") {
		t.Errorf("ci build with no engine and no registry exited %d, want 2 naming the missing engine and --engine host before any pull:\n%s", code, msg)
	}
}
