// Package buildkittest runs a real BuildKit daemon for tests: buildkitd with its OCI worker
// on runc, driven by buildctl. BuildKit is the builder behind `docker build` (and inside the
// Dagger engine), and its built-in Dockerfile frontend is the one `docker build` uses, so a
// Dockerfile that builds here builds there. No Docker engine is needed.
//
// buildkitd and buildctl are not Debian packages; .ci/install-buildkit builds them from the
// Go module proxy at a pinned version.
package buildkittest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// rootEnv names buildkitd's state directory (its build cache). It persists between runs so a
// second run on a machine builds from cache.
const rootEnv = "NGINX_FORGE_BUILDKIT_ROOT"

// defaultRoot is the state directory without rootEnv.
const defaultRoot = "/var/cache/nginx-forge/buildkit"

const installHint = "run .ci/install-buildkit (builds buildkitd and buildctl from the Go module proxy)"

// Options configure the daemon.
type Options struct {
	// Root is buildkitd's state directory; default $NGINX_FORGE_BUILDKIT_ROOT or defaultRoot.
	// One daemon at a time may use a root (buildkitd locks it).
	Root string
	// PlainHTTP lists registries (host:port) that speak plain HTTP, like the tests' loopback
	// registry: images are pulled from and pushed to them without TLS.
	PlainHTTP []string
}

// Daemon is a running buildkitd.
type Daemon struct {
	// Addr is the daemon's address for buildctl --addr.
	Addr     string
	buildctl string
	logPath  string
	dir      string
}

// Start starts buildkitd for the test and stops it when the test ends. Without root, runc,
// buildkitd or buildctl it skips, or fails under NGINX_FORGE_E2E=1, saying what to install.
func Start(t testing.TB, o Options) *Daemon {
	t.Helper()
	testenv.Root(t)
	testenv.Tool(t, "runc", "runc")
	bin := testenv.Tool(t, "buildkitd", installHint)
	ctl := testenv.Tool(t, "buildctl", installHint)
	if o.Root == "" {
		o.Root = os.Getenv(rootEnv)
	}
	if o.Root == "" {
		o.Root = defaultRoot
	}
	if err := os.MkdirAll(o.Root, 0o700); err != nil {
		t.Fatalf("creating the buildkitd root %s: %v", o.Root, err)
	}
	// A short directory of our own for the socket: unix socket paths are limited to 108
	// bytes, and t.TempDir() paths with long test names can exceed that.
	dir, err := os.MkdirTemp("", "bk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	d := &Daemon{Addr: "unix://" + filepath.Join(dir, "buildkitd.sock"), buildctl: ctl, logPath: filepath.Join(dir, "buildkitd.log"), dir: dir}
	cfg := filepath.Join(dir, "buildkitd.toml")
	if err := os.WriteFile(cfg, []byte(config(o)), 0o644); err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(d.logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--config", cfg, "--root", o.Root, "--addr", d.Addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group, so the runc children it may leave are signalled with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting buildkitd: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})

	// Ready when buildctl can list the workers (the OCI worker is up).
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			t.Fatalf("buildkitd exited during start (%v):\n%s", err, d.Log())
		default:
		}
		out, err := exec.Command(ctl, "--addr", d.Addr, "debug", "workers").CombinedOutput()
		if err == nil && bytes.Contains(out, []byte("linux/")) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("buildkitd did not answer within 60 s (buildctl debug workers: %v %s):\n%s", err, out, d.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return d
}

// config is buildkitd.toml: only the OCI worker (there is no containerd), on Debian's runc,
// with the host's network: the test machines have no CNI plugins, and builds must reach the
// loopback mirror and registry the tests serve. The cache is bounded so a developer's
// machine does not fill up over many runs.
func config(o Options) string {
	var b strings.Builder
	b.WriteString(`[worker.oci]
  enabled = true
  binary = "runc"
  networkMode = "host"
  gc = true
  maxUsedSpace = "20GB"

[worker.containerd]
  enabled = false
`)
	hosts := append([]string(nil), o.PlainHTTP...)
	sort.Strings(hosts)
	for _, h := range hosts {
		fmt.Fprintf(&b, "\n[registry.%q]\n  http = true\n", h)
	}
	return b.String()
}

// Log returns what buildkitd wrote so far (for failure messages).
func (d *Daemon) Log() string {
	b, _ := os.ReadFile(d.logPath)
	return string(b)
}

// Build describes one `docker build -f Dockerfile` equivalent.
type Build struct {
	// Dockerfile is the file to build; its directory is also the build context.
	Dockerfile string
	// Args are the build args (--build-arg NAME=VALUE).
	Args map[string]string
	// Push is the image reference the result is pushed to (a registry in Options.PlainHTTP
	// or one with TLS).
	Push string
}

// Result is what a build produced.
type Result struct {
	// Digest is the pushed image's manifest digest ("sha256:...").
	Digest string
	// Log is buildctl's plain progress output: one "#N [stage k/n] INSTRUCTION" header per
	// step, then either "#N CACHED" or the step's output lines ("#N 12.34 ...") and
	// "#N DONE 1.2s".
	Log string
}

// Build runs b with buildctl and BuildKit's built-in Dockerfile frontend.
func (d *Daemon) Build(ctx context.Context, b Build) (*Result, error) {
	dir, file := filepath.Split(b.Dockerfile)
	if dir == "" {
		dir = "."
	}
	meta := filepath.Join(d.dir, fmt.Sprintf("metadata-%d.json", time.Now().UnixNano()))
	args := []string{"--addr", d.Addr, "build", "--progress=plain",
		"--frontend", "dockerfile.v0",
		"--local", "context=" + dir, "--local", "dockerfile=" + dir,
		"--opt", "filename=" + file,
		// The file's "# syntax=docker/dockerfile:1.7" line makes the built-in frontend hand the
		// build to that frontend image, pulled from Docker Hub, which the test machines
		// cannot reach. The "cmdline" opt is how BuildKit marks a build that was already
		// handed over, so the built-in frontend (which implements the same syntax: heredocs,
		// ADD --checksum, cache mounts) builds it itself.
		"--opt", "cmdline=" + file,
		"--metadata-file", meta,
		"--output", "type=image,name=" + b.Push + ",push=true",
	}
	names := make([]string, 0, len(b.Args))
	for k := range b.Args {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		args = append(args, "--opt", "build-arg:"+k+"="+b.Args[k])
	}
	cmd := exec.CommandContext(ctx, d.buildctl, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	res := &Result{Log: out.String()}
	if err != nil {
		return res, fmt.Errorf("buildctl build -f %s: %w\n%s", b.Dockerfile, err, toolbox.Tail(res.Log, 4000))
	}
	raw, err := os.ReadFile(meta)
	if err != nil {
		return res, fmt.Errorf("reading the build's metadata: %w", err)
	}
	var m struct {
		Digest string `json:"containerimage.digest"`
	}
	if err := json.Unmarshal(raw, &m); err != nil || !strings.HasPrefix(m.Digest, "sha256:") {
		return res, fmt.Errorf("the build's metadata %s has no image digest (%v): %s", meta, err, raw)
	}
	res.Digest = m.Digest
	return res, nil
}

// ExecutedRuns returns the headers of the RUN steps in log that executed instead of coming
// from the cache: a step that ran ends with "#N DONE <seconds>", a cached one with
// "#N CACHED". Only RUN steps are counted: BuildKit resolves every FROM image and every ADD
// URL again on each build (a DONE line even when nothing changed; ADD --checksum content
// is then taken from the cache), and its "[internal]" steps always run.
func ExecutedRuns(log string) []string {
	headers := map[string]string{}
	done := map[string]bool{}
	cached := map[string]bool{}
	var order []string
	for _, line := range strings.Split(log, "\n") {
		id, rest, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(id, "#") {
			continue
		}
		switch {
		case strings.HasPrefix(rest, "["):
			if _, seen := headers[id]; !seen {
				order = append(order, id)
			}
			headers[id] = rest
		case rest == "CACHED":
			cached[id] = true
		case strings.HasPrefix(rest, "DONE "):
			done[id] = true
		}
	}
	var steps []string
	for _, id := range order {
		_, instruction, _ := strings.Cut(headers[id], "] ")
		if done[id] && !cached[id] && strings.HasPrefix(instruction, "RUN ") {
			steps = append(steps, headers[id])
		}
	}
	return steps
}
