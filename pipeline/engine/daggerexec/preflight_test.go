package daggerexec

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// noEngineEnv leaves the test with no Dagger variables and a PATH holding only dir.
func noEngineEnv(t *testing.T, dir string) {
	t.Helper()
	for _, v := range []string{envSessionPort, envRunnerHost, envCLIBin, "DAGGER_SESSION_TOKEN"} {
		t.Setenv(v, "") // restores the old value after the test
		os.Unsetenv(v)
	}
	t.Setenv("PATH", dir)
}

// TestNoEngineFailsFast is the acceptance check "with no engine, the build fails fast with
// one clear error": no session, no runner host, no dagger CLI and no container runtime.
func TestNoEngineFailsFast(t *testing.T) {
	noEngineEnv(t, t.TempDir())
	e := New()
	start := time.Now()
	err := e.Connect(context.Background())
	took := time.Since(start)
	if err == nil {
		e.Close()
		t.Fatal("Connect succeeded with no engine and no container runtime")
	}
	if took > 5*time.Second {
		t.Errorf("Connect took %v to fail; it must fail in seconds", took)
	}
	if !errors.Is(err, ErrNoEngine) {
		t.Errorf("error %v is not ErrNoEngine", err)
	}
	for _, want := range []string{"DAGGER_SESSION_PORT", "_EXPERIMENTAL_DAGGER_RUNNER_HOST", "docker: not in PATH", "podman: not in PATH", "--engine host"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	t.Logf("failed in %v: %v", took, err)
}

// TestBrokenRuntimeFailsFast: a docker CLI whose daemon is down is reported with its own
// words. (No Docker runs on these machines; the script stands in for a stopped daemon.)
func TestBrokenRuntimeFailsFast(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	noEngineEnv(t, dir)
	start := time.Now()
	_, err := preflight(context.Background())
	if err == nil {
		t.Fatal("preflight accepted a docker whose daemon is down")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("preflight took %v", took)
	}
	if !strings.Contains(err.Error(), "`docker info` failed: Cannot connect to the Docker daemon") {
		t.Errorf("error does not quote docker's complaint: %v", err)
	}
}

// TestSessionPortNotListening: DAGGER_SESSION_PORT pointing at a closed port (a `dagger run`
// that ended) fails at once, naming the port, instead of in the SDK's first query.
func TestSessionPortNotListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	l.Close()
	noEngineEnv(t, t.TempDir())
	t.Setenv(envSessionPort, port)
	_, err = preflight(context.Background())
	if err == nil || !errors.Is(err, ErrNoEngine) || !strings.Contains(err.Error(), "127.0.0.1:"+port) {
		t.Errorf("preflight = %v, want ErrNoEngine naming 127.0.0.1:%s", err, port)
	}

	t.Setenv(envSessionPort, "eighty")
	if _, err := preflight(context.Background()); err == nil || !strings.Contains(err.Error(), `"eighty"`) {
		t.Errorf("preflight with a bad port = %v", err)
	}
}

// TestSessionPortListening: with a session listening, preflight lets the SDK connect.
func TestSessionPortListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	noEngineEnv(t, t.TempDir())
	t.Setenv(envSessionPort, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	if via, err := preflight(context.Background()); err != nil || !strings.Contains(via, "session") {
		t.Errorf("preflight = %q, %v; want the session accepted", via, err)
	}
}

// TestCLIVersionChoice: a dagger CLI in PATH is used only when its minor version matches
// the SDK's (v0.21); another version is left alone and the SDK fetches its own.
func TestCLIVersionChoice(t *testing.T) {
	for _, tc := range []struct {
		version string
		use     bool
	}{{"v0.21.3", true}, {"v0.18.9", false}} {
		dir := t.TempDir()
		script := "#!/bin/sh\necho 'dagger " + tc.version + " (image://registry.dagger.io/engine:" + tc.version + ") linux/amd64'\n"
		if err := os.WriteFile(filepath.Join(dir, "dagger"), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		noEngineEnv(t, dir)
		path, note := findCLI(context.Background())
		if got := os.Getenv(envCLIBin); (got != "") != tc.use || (path != "") != tc.use {
			t.Errorf("dagger %s: %s=%q, path %q (%s); want used=%v", tc.version, envCLIBin, got, path, note, tc.use)
		}
		if !tc.use && !strings.Contains(note, "downloads dagger v0.21.6") {
			t.Errorf("dagger %s: note %q does not say the SDK downloads its own CLI", tc.version, note)
		}
	}
}
