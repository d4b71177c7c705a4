// Package registrytest runs the real CNCF distribution registry (Debian's docker-registry
// package) on loopback for tests, and a fault-injecting proxy to put in front of it.
//
// The in-process registry of go-containerregistry (pkg/registry) is enough for most unit
// tests; this one exists because publishing must be proven against the registry people
// actually run: its upload protocol, its manifest validation (it rejects manifests whose
// blobs are missing) and its lack of the OCI referrers API (so the tag-schema fallback is
// exercised).
package registrytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// binary is where Debian's docker-registry package installs the registry.
const binary = "/usr/bin/docker-registry"

// Registry is a running (or stopped) docker-registry process. Its storage survives Stop and
// Restart, so a test can take the registry away in the middle of a publish and bring the
// same content back afterwards.
type Registry struct {
	// Host is "127.0.0.1:PORT", usable in references ("127.0.0.1:PORT/repo:tag").
	Host string

	bin      string
	config   string
	storage  string
	logPath  string
	htpasswd string // with WithBasicAuth
	user     string
	password string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

// Option configures Start.
type Option func(*Registry)

// WithBasicAuth makes the registry require HTTP basic authentication as user with password
// (distribution's htpasswd access controller): every request without them, or with others,
// is answered 401 with `WWW-Authenticate: Basic realm=...`, as a private registry answers.
// DockerConfig writes the matching client configuration.
func WithBasicAuth(user, password string) Option {
	return func(r *Registry) { r.user, r.password = user, password }
}

// Start runs the registry on a free loopback port with throwaway filesystem storage (under
// t.TempDir(), deletes enabled), waits until /v2/ answers, and stops it when the test ends.
// It skips (or fails under NGINX_FORGE_E2E=1) when the package is not installed.
func Start(t testing.TB, opts ...Option) *Registry {
	t.Helper()
	bin := binary
	if _, err := os.Stat(bin); err != nil {
		bin = testenv.Tool(t, "docker-registry", "docker-registry")
	}
	dir := t.TempDir()
	r := &Registry{
		bin:     bin,
		config:  filepath.Join(dir, "config.yml"),
		storage: filepath.Join(dir, "storage"),
		logPath: filepath.Join(dir, "registry.log"),
	}
	for _, o := range opts {
		o(r)
	}
	if r.user != "" {
		r.htpasswd = filepath.Join(dir, "htpasswd")
		if err := writeHtpasswd(r.htpasswd, r.user, r.password); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	// A port freed by the kernel can be taken by someone else before the registry binds
	// it; try a few ports before giving up.
	for attempt := 0; attempt < 5; attempt++ {
		var port int
		port, err = toolbox.FreePort()
		if err != nil {
			break
		}
		r.Host = fmt.Sprintf("127.0.0.1:%d", port)
		if err = r.writeConfig(); err != nil {
			break
		}
		if err = r.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("starting %s: %v", r.bin, err)
	}
	t.Cleanup(func() { _ = r.Stop() })
	return r
}

// Ref returns "HOST/path" for a repository (and optional ":tag" or "@digest" in path).
func (r *Registry) Ref(path string) string { return r.Host + "/" + path }

// Stop kills the registry process (SIGKILL: it is meant to die mid-request in fault
// tests) and waits for it. Storage is kept. Stopping a stopped registry is a no-op.
func (r *Registry) Stop() error {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.cmd, r.done = nil, nil
	r.mu.Unlock()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Kill()
	<-done
	return nil
}

// Restart starts the registry again on the same port with the same storage.
func (r *Registry) Restart() error {
	if err := r.Stop(); err != nil {
		return err
	}
	var err error
	// The port was ours a moment ago; a bind can briefly fail, so retry for a while.
	for i := 0; i < 20; i++ {
		if err = r.start(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("restarting registry on %s: %w", r.Host, err)
}

// Running reports whether the process is up.
func (r *Registry) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil
}

// Log returns what the registry wrote so far (for failure messages).
func (r *Registry) Log() string {
	b, _ := os.ReadFile(r.logPath)
	return string(b)
}

func (r *Registry) writeConfig() error {
	// Debian's binary is distribution 2.8: storage.delete lets tests remove manifests,
	// the health check of the storage driver is off because it only adds log noise, and
	// the access log is disabled so the log holds errors only.
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: nginx-forge-test-only
health:
  storagedriver:
    enabled: false
`, r.storage, r.Host)
	if r.htpasswd != "" {
		cfg += fmt.Sprintf("auth:\n  htpasswd:\n    realm: nginx-forge-test\n    path: %s\n", r.htpasswd)
	}
	return os.WriteFile(r.config, []byte(cfg), 0o644)
}

func (r *Registry) start() error {
	logf, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(r.bin, "serve", r.config)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Own process group, and killed if the test binary dies: no registry outlives a test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); logf.Close(); close(done) }()

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := waitReady(ctx, r.Host, r.user, r.password, done); err != nil {
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%w; registry log:\n%s", err, toolbox.Tail(r.Log(), 2000))
	}
	r.mu.Lock()
	r.cmd, r.done = cmd, done
	r.mu.Unlock()
	return nil
}

func waitReady(ctx context.Context, host, user, password string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
	if err != nil {
		return err
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	for {
		select {
		case <-exited:
			return errors.New("registry exited before answering /v2/")
		case <-ctx.Done():
			return fmt.Errorf("registry on %s did not answer /v2/: %w", host, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := client.Do(req)
		if err != nil {
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil
		}
	}
}
