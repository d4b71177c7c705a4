//go:build integration

package ocirun_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/ocirun"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// contractTmpfs is what the host engine gives every container of the image: a tmpfs on each
// of the runtime contract's writable directories and /tmp, without which nginx cannot start
// on the read-only root.
var contractTmpfs = ocirun.WithTmpfs(plan.Runtime.Tmpfs()...)

// nginxImage is the real image: the stand-in distroless base plus the install tree the host
// executor built from the test lock.
var built struct {
	sync.Mutex
	img v1.Image
}

func nginxImage(t *testing.T) v1.Image {
	t.Helper()
	testenv.Root(t)
	testenv.Tool(t, "runc", "runc")
	testenv.Tool(t, "umoci", "umoci")
	built.Lock()
	defer built.Unlock()
	if built.img != nil {
		return built.img
	}
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	base, _ := basetest.For(t, basetest.Options{})
	img, err := image.Assemble(base, testenv.BuiltTree(t), l, image.WithBaseRef(basetest.Name))
	if err != nil {
		t.Fatal(err)
	}
	built.img = img
	return img
}

func prepare(t *testing.T, ctx context.Context, img v1.Image) *ocirun.Bundle {
	t.Helper()
	b, err := ocirun.Prepare(ctx, img, ocirun.WithProgress(testenv.Progress(t)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("closing bundle: %v", err)
		}
	})
	return b
}

func httpGet(ctx context.Context, c *ocirun.Container, path string) (int, string, error) {
	hc := &http.Client{Transport: &http.Transport{DialContext: c.DialContext}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.Addr("tcp", 8080)+path, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		sb.WriteString(sc.Text() + "\n")
	}
	return resp.StatusCode, sb.String(), nil
}

func waitHTTP(t *testing.T, ctx context.Context, c *ocirun.Container) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		code, body, err := httpGet(ctx, c, "/healthz")
		if err == nil && code == 200 && body == "ok\n" {
			return
		}
		if exited, how := c.Exited(); exited || time.Now().After(deadline) {
			t.Fatalf("nginx not serving (exited=%v %s, last %d %v); output:\n%s", exited, how, code, err, c.Output())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func runcList(t *testing.T) string {
	out, err := exec.Command("runc", "--root", ocirun.DefaultRuncRoot, "list", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("runc list: %v %s", err, out)
	}
	return string(out)
}

// TestContainerLifecycle starts the image as it is meant to run, talks to it inside its
// network namespace, looks at its processes and mounts, execs into it, and stops it,
// leaving nothing behind.
func TestContainerLifecycle(t *testing.T) {
	img := nginxImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := prepare(t, ctx, img)
	if uid, gid := b.User(); uid != 65532 || gid != 65532 {
		t.Errorf("user %d:%d, want 65532:65532 from the image config", uid, gid)
	}
	c, err := b.Start(ctx, contractTmpfs)
	if err != nil {
		t.Fatal(err)
	}
	waitHTTP(t, ctx, c)

	// Every process runs as 65532, workers included.
	st, err := c.ProcStatus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st) < 2 {
		t.Errorf("%d processes, want a master and at least one worker", len(st))
	}
	for _, s := range st {
		if !strings.Contains(s, "Uid:\t65532\t65532\t65532\t65532") {
			t.Errorf("process not running as 65532:\n%s", s)
		}
		// No capabilities at all, even as root would have had none.
		if !strings.Contains(s, "CapEff:\t0000000000000000") || !strings.Contains(s, "CapBnd:\t0000000000000000") {
			t.Errorf("process has capabilities:\n%s", s)
		}
	}
	mi, err := c.MountInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rootRO bool
	for _, l := range strings.Split(mi, "\n") {
		f := strings.Fields(l)
		if len(f) > 5 && f[4] == "/" {
			rootRO = strings.HasPrefix(f[5], "ro")
		}
	}
	if !rootRO {
		t.Errorf("/ is not read-only:\n%s", mi)
	}

	// exec runs inside the running container, as the image's user.
	so, se, code, err := c.Exec(ctx, "/usr/sbin/nginx", "-v")
	if err != nil || code != 0 || !strings.Contains(string(so)+string(se), "nginx version: nginx/") {
		t.Errorf("exec nginx -v: code %d err %v: %s%s", code, err, so, se)
	}
	_, _, code, err = c.Exec(ctx, "/bin/sh", "-c", "true")
	if err != nil || code == 0 {
		t.Errorf("exec /bin/sh: code %d, err %v; want a non-zero exit (no shell in the image)", code, err)
	}
	if !strings.Contains(runcList(t), c.ID()) {
		t.Errorf("runc list does not show %s", c.ID())
	}
	// The access log reaches our pipe.
	if !strings.Contains(string(c.Output()), "GET /healthz") && !strings.Contains(string(c.Output()), "start worker process") {
		t.Errorf("no nginx output captured:\n%s", c.Output())
	}

	// Stop: SIGQUIT (the image's stop signal) lets nginx finish gracefully.
	start := time.Now()
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if exited, how := c.Exited(); !exited || how != "exited with status 0" {
		t.Errorf("after Stop: exited=%v %q, want a clean exit on SIGQUIT", exited, how)
	}
	t.Logf("graceful stop took %s", time.Since(start))
	if strings.Contains(runcList(t), c.ID()) {
		t.Errorf("container %s still known to runc after Stop", c.ID())
	}
}

// TestNetworkNamespacesAreIsolated: two servers on port 8080 at once, each reached in its
// own namespace; nothing listens on the host.
func TestNetworkNamespacesAreIsolated(t *testing.T) {
	img := nginxImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := prepare(t, ctx, img)
	c1, err := b.Start(ctx, contractTmpfs)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Stop(ctx)
	c2, err := b.Start(ctx, contractTmpfs)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Stop(ctx)
	waitHTTP(t, ctx, c1)
	waitHTTP(t, ctx, c2)
	if c1.ID() == c2.ID() {
		t.Fatal("two containers share an id")
	}
	// Stopping one leaves the other serving.
	if err := c1.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if code, _, err := httpGet(ctx, c2, "/healthz"); err != nil || code != 200 {
		t.Errorf("second container after the first stopped: %d %v", code, err)
	}
	// Without a certificate mounted, nothing listens on 8443.
	if conn, err := c2.DialContext(ctx, "tcp", c2.Addr("tcp", 8443)); err == nil {
		conn.Close()
		t.Error("port 8443 open without /etc/nginx/tls mounted")
	}
}

// TestHostNetworkRefusesBusyPort: with the host's network, a taken port is named before
// anything starts.
func TestHostNetworkRefusesBusyPort(t *testing.T) {
	img := nginxImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := prepare(t, ctx, img)
	l, err := net.Listen("tcp", ":8080")
	if err == nil {
		defer l.Close()
	} // else someone else holds 8080: the refusal must happen all the same
	c, err := b.Start(ctx, contractTmpfs, ocirun.WithHostNetwork())
	if err == nil {
		c.Stop(ctx)
		t.Fatal("started with port 8080 taken on the host")
	}
	if !strings.Contains(err.Error(), "port 8080/tcp is in use") {
		t.Errorf("error %q does not name the port", err)
	}
}

// TestRunOneShotAndExecAfterExit: Run is `docker run --rm`; Exec on a container whose
// nginx died runs in a fresh container with the same mounts, so `nginx -t` explains.
func TestRunOneShotAndExecAfterExit(t *testing.T) {
	img := nginxImage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := prepare(t, ctx, img)
	so, se, code, err := b.Run(ctx, []string{"/usr/sbin/nginx", "-t"}, contractTmpfs)
	if err != nil || code != 0 {
		t.Fatalf("nginx -t: code %d err %v\n%s%s", code, err, so, se)
	}

	confD := t.TempDir()
	os.Chmod(confD, 0o755)
	os.WriteFile(confD+"/bad.conf", []byte("nonsense;\n"), 0o644)
	c, err := b.Start(ctx, contractTmpfs, ocirun.WithMount(confD, "/etc/nginx/conf.d", true))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("nginx kept running with a broken conf.d")
	}
	if _, how := c.Exited(); how != "exited with status 1" {
		t.Errorf("exit: %q", how)
	}
	so, se, code, err = c.Exec(ctx, "/usr/sbin/nginx", "-t")
	out := string(so) + string(se)
	if err != nil || code == 0 || !strings.Contains(out, `unknown directive "nonsense"`) || !strings.Contains(out, "bad.conf") {
		t.Errorf("nginx -t after exit: code %d err %v\n%s", code, err, out)
	}
	if !strings.Contains(string(c.Output()), "nonsense") {
		t.Errorf("container output lacks nginx's error:\n%s", c.Output())
	}
}

// TestPullFromRegistry pulls by digest from the real registry (plain HTTP on loopback).
func TestPullFromRegistry(t *testing.T) {
	img := nginxImage(t)
	reg := registrytest.Start(t)
	d, err := basetest.Push(context.Background(), img, reg.Ref("nginx-forge/ocirun:test"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b, err := ocirun.Pull(ctx, d.String(), ocirun.WithProgress(testenv.Progress(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	want, _ := img.Digest()
	if b.Digest() != want {
		t.Errorf("pulled %s, pushed %s", b.Digest(), want)
	}
	if _, err := os.Stat(b.RootFS() + "/usr/sbin/nginx"); err != nil {
		t.Error(err)
	}
	if cfg := b.Config(); cfg.StopSignal != "SIGQUIT" || fmt.Sprint(cfg.Entrypoint) != "[/usr/sbin/nginx -g daemon off;]" {
		t.Errorf("config: stop %q entrypoint %q", cfg.StopSignal, cfg.Entrypoint)
	}
	if _, err := ocirun.Pull(ctx, reg.Ref("nginx-forge/ocirun:absent")); err == nil || !strings.Contains(err.Error(), "nginx-forge/ocirun:absent") {
		t.Errorf("pulling a missing tag: %v", err)
	}
}

// TestHostNetwork: with the host's network the server is reached on the host's loopback.
func TestHostNetwork(t *testing.T) {
	img := nginxImage(t)
	for _, p := range []string{"8080", "8443"} {
		l, err := net.Listen("tcp", "127.0.0.1:"+p)
		if err != nil {
			t.Skipf("port %s is busy on this host (%v): the host-network mode cannot be tried now", p, err)
		}
		l.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	b := prepare(t, ctx, img)
	c, err := b.Start(ctx, contractTmpfs, ocirun.WithHostNetwork())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(ctx)
	waitHTTP(t, ctx, c)
	// An ordinary client on the host gets there too.
	resp, err := http.Get("http://127.0.0.1:8080/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("host GET /healthz: %s", resp.Status)
	}
}
