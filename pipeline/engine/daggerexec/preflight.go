package daggerexec

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"dagger.io/dagger/engineconn"
)

// The environment variables the Dagger SDK itself reads (engineconn.Get). They keep working
// unchanged: this package only looks at them to fail fast, never rewrites them, except that
// it points _EXPERIMENTAL_DAGGER_CLI_BIN at a `dagger` found in PATH when it is unset.
const (
	envSessionPort = "DAGGER_SESSION_PORT"              // set by `dagger run`: an open session
	envRunnerHost  = "_EXPERIMENTAL_DAGGER_RUNNER_HOST" // an engine the CLI connects to
	envCLIBin      = "_EXPERIMENTAL_DAGGER_CLI_BIN"     // the CLI the SDK starts a session with
)

// runtimes are the container runtimes the dagger CLI can start its engine container with,
// in the order the CLI tries them.
var runtimes = []string{"docker", "podman", "nerdctl", "finch"}

// probeTimeout bounds each check so that a missing engine fails in seconds, not after the
// SDK's own, much longer, connection attempts.
const probeTimeout = 10 * time.Second

// ErrNoEngine is returned (wrapped) when no Dagger engine can be reached or started.
var ErrNoEngine = errors.New("no Dagger engine reachable")

// checkEngine reports, in seconds and without connecting, whether a Dagger engine can be
// reached or started (an error wrapping ErrNoEngine otherwise). Callers run it before slow
// work such as downloading sources, so that a machine without an engine fails at once.
func checkEngine(ctx context.Context) error {
	_, err := preflight(ctx)
	return err
}

// preflight checks, in seconds, that dagger.Connect has a way to reach an engine: an open
// session (DAGGER_SESSION_PORT), a runner host (_EXPERIMENTAL_DAGGER_RUNNER_HOST), or a
// container runtime that works, for the dagger CLI to start its engine in. It returns what
// it found, for the progress log, and an error naming everything that is missing otherwise.
func preflight(ctx context.Context) (string, error) {
	if port, ok := os.LookupEnv(envSessionPort); ok {
		if _, err := strconv.Atoi(port); err != nil {
			return "", fmt.Errorf("%w: %s=%q is not a port number", ErrNoEngine, envSessionPort, port)
		}
		d := net.Dialer{Timeout: probeTimeout}
		c, err := d.DialContext(ctx, "tcp", net.JoinHostPort("127.0.0.1", port))
		if err != nil {
			return "", fmt.Errorf("%w: %s=%s but nothing listens on 127.0.0.1:%s (%v); run the build inside `dagger run`, or build on this machine with --engine host",
				ErrNoEngine, envSessionPort, port, port, err)
		}
		c.Close()
		return "the Dagger session on 127.0.0.1:" + port, nil
	}

	cli, cliNote := findCLI(ctx)

	if host := os.Getenv(envRunnerHost); host != "" {
		return "the engine at " + host + " (" + cliNote + ")", nil
	}

	var missing []string
	for _, rt := range runtimes {
		bin, err := exec.LookPath(rt)
		if err != nil {
			missing = append(missing, rt+": not in PATH")
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		var stderr strings.Builder
		cmd := exec.CommandContext(pctx, bin, "info")
		cmd.Stderr = &stderr
		err = cmd.Run()
		cancel()
		if err != nil {
			// The reason ("Cannot connect to the Docker daemon ...") is on stderr; stdout
			// holds the client's half of the report.
			missing = append(missing, fmt.Sprintf("`%s info` failed: %s", rt, firstLine([]byte(stderr.String()), err)))
			continue
		}
		if cli == "" {
			return rt + " (" + cliNote + ")", nil
		}
		return rt + " with " + cliNote, nil
	}
	return "", fmt.Errorf("%w: %s and %s are unset, and no container runtime works to start an engine in (%s; %s); start Docker (or Podman, nerdctl), run under `dagger run`, set %s to a running engine, or build on this machine with --engine host",
		ErrNoEngine, envSessionPort, envRunnerHost, strings.Join(missing, "; "), cliNote, envRunnerHost)
}

// findCLI returns the dagger CLI the SDK will start a session with and a note for the log.
// The SDK uses _EXPERIMENTAL_DAGGER_CLI_BIN, else downloads the CLI of its own version from
// dl.dagger.io; a `dagger` of the same minor version already in PATH is used instead of that
// download (offline runners, pinned installs), by setting the variable the SDK reads.
func findCLI(ctx context.Context) (path, note string) {
	if bin := os.Getenv(envCLIBin); bin != "" {
		return bin, "the dagger CLI " + bin + " from " + envCLIBin
	}
	want := "v" + strings.TrimPrefix(engineconn.CLIVersion, "v")
	bin, err := exec.LookPath("dagger")
	if err != nil {
		return "", "no dagger CLI in PATH: the SDK downloads dagger " + want
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	out, err := exec.CommandContext(pctx, bin, "version").Output()
	cancel()
	got := ""
	if f := strings.Fields(string(out)); err == nil && len(f) >= 2 {
		got = f[1] // "dagger v0.21.6 (image://...) linux/amd64"
	}
	if minor(got) != minor(want) {
		return "", fmt.Sprintf("%s is dagger %q, not %s: the SDK downloads dagger %s", bin, got, minor(want)+".x", want)
	}
	os.Setenv(envCLIBin, bin)
	return bin, "the dagger CLI " + bin + " (" + got + ")"
}

// minor returns "v0.21" for "v0.21.6".
func minor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return v
	}
	return parts[0] + "." + parts[1]
}

func firstLine(out []byte, err error) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		return err.Error()
	}
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
