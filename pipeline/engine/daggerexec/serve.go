package daggerexec

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"dagger.io/dagger"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/toolbox"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// serveReadyTimeout bounds Serve's wait for the service to answer HTTP: the engine may
// first have to load the image.
const serveReadyTimeout = 2 * time.Minute

// Target is the assembled image running as a Dagger service, with its ports forwarded to
// this machine. It implements pipeline/smoke's Target, so the same smoke suite that tests
// the image under runc here tests it inside the engine before any tag moves. Close it.
type Target struct {
	ctr     *dagger.Container // the imported image with its mounts: Exec runs in a copy of it
	svc     *dagger.Service   // the image running as a service (the in-engine client binds it)
	rootfs  string
	tmp     string
	forward map[portKey]string // {tcp 8080} -> "127.0.0.1:41234"

	stop context.CancelFunc
	wg   sync.WaitGroup
	mu   sync.Mutex
	died error // set when a tunnel ends before Close
}

// Serve imports img into the engine, starts it as a service (its own entrypoint, as
// `docker run` would), forwards each of plan.Runtime's TCP ports to a free port on this
// machine, and polls until the first one answers HTTP. tlsDir is a host directory mounted
// at plan.Runtime.TLSDir (what smoke.TLS.WriteDir writes: tls.crt, tls.key, tls.conf),
// owned by the image's user; "" mounts nothing. The image is the one pipeline/image
// assembled from Run's install tree; nothing is rebuilt here.
func (e *Executor) Serve(ctx context.Context, p *plan.Plan, img v1.Image, tlsDir string) (_ *Target, err error) {
	if err := e.Connect(ctx); err != nil {
		return nil, err
	}
	t := &Target{forward: map[portKey]string{}}
	if t.tmp, err = os.MkdirTemp("", "nginx-forge-dagger-smoke-"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()

	if err := e.importImage(ctx, t, p, img, tlsDir); err != nil {
		return nil, err
	}
	if err := e.startService(ctx, t, serveReadyTimeout); err != nil {
		return nil, err
	}
	return t, nil
}

// importImage puts img into the engine as t.ctr (with the TLS directory mounted, when
// given) and exports its root filesystem to t.rootfs for the static checks.
func (e *Executor) importImage(ctx context.Context, t *Target, p *plan.Plan, img v1.Image, tlsDir string) error {
	// The image goes in as an OCI tarball (Container.Import's format).
	tarPath := filepath.Join(t.tmp, "image.oci")
	if err := writeOCITarball(tarPath, filepath.Join(t.tmp, "layout"), img); err != nil {
		return fmt.Errorf("dagger smoke: writing the image for import: %w", err)
	}
	t.ctr = e.client.Container(dagger.ContainerOpts{Platform: daggerPlatform(p.Platform)}).
		Import(e.client.Host().File(tarPath))
	if tlsDir != "" {
		abs, err := filepath.Abs(tlsDir)
		if err != nil {
			return err
		}
		// Host files arrive owned by root; nginx runs as the image's user and must read the key.
		t.ctr = t.ctr.WithMountedDirectory(plan.Runtime.TLSDir, e.client.Host().Directory(abs),
			dagger.ContainerWithMountedDirectoryOpts{Owner: plan.Runtime.User, ReadOnly: true})
	}

	// The image's files, for the static checks (ELF hardening, no shell, dynamic needs).
	t.rootfs = filepath.Join(t.tmp, "rootfs")
	if _, err := t.ctr.Rootfs().Export(ctx, t.rootfs); err != nil {
		return fmt.Errorf("dagger smoke: exporting the image's root filesystem: %w", err)
	}
	return nil
}

// startService runs t.ctr as a service with its TCP ports forwarded to this machine, and
// waits until the first one answers HTTP.
func (e *Executor) startService(ctx context.Context, t *Target, readyTimeout time.Duration) error {
	// Readiness is polled below over the forwarded port, so the engine's own health check
	// (which would wait for 8443 even when no certificate is mounted) is off. Only TCP ports
	// are forwarded: Dagger's host tunnels listen with net.Listen on the client, which has
	// no UDP, so the HTTP/3 check runs inside the engine instead, from the smoke client
	// bound to this service (t.svc).
	svcCtr := t.ctr
	var tcp []dagger.PortForward
	for _, port := range plan.Runtime.PortList() {
		proto := dagger.NetworkProtocolTcp
		if port.Protocol == "udp" {
			proto = dagger.NetworkProtocolUdp
		}
		svcCtr = svcCtr.WithExposedPort(port.Number, dagger.ContainerWithExposedPortOpts{
			Protocol: proto, ExperimentalSkipHealthcheck: true,
		})
		if proto != dagger.NetworkProtocolTcp {
			continue
		}
		front, err := toolbox.FreePort()
		if err != nil {
			return err
		}
		tcp = append(tcp, dagger.PortForward{Backend: port.Number, Frontend: front, Protocol: proto})
		t.forward[portKey{port.Protocol, port.Number}] = net.JoinHostPort("127.0.0.1", strconv.Itoa(front))
	}
	svc := svcCtr.AsService(dagger.ContainerAsServiceOpts{UseEntrypoint: true})
	t.svc = svc

	// Service.Up holds the tunnels open until its context ends and says nothing about
	// readiness: it runs in the background until Close, and readiness is polled.
	upCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stop = stop
	tcpDone := t.up(upCtx, svc, tcp)

	var first string
	if len(tcp) > 0 {
		first = t.forward[portKey{"tcp", tcp[0].Backend}]
	}
	e.sink.Send(progress.Detailf("dagger smoke: starting the image as a service, waiting for HTTP on %s", first))
	if err := waitHTTP(ctx, first, readyTimeout, tcpDone); err != nil {
		return fmt.Errorf("dagger smoke: the image did not become ready: %w", err)
	}
	return nil
}

// up runs Service.Up for ports in the background. It returns a channel closed when the
// tunnel ends; Exited reports why, if it ended before Close.
func (t *Target) up(ctx context.Context, svc *dagger.Service, ports []dagger.PortForward) <-chan struct{} {
	done := make(chan struct{})
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		defer close(done)
		err := svc.Up(ctx, dagger.ServiceUpOpts{Ports: ports})
		if ctx.Err() != nil {
			return // Close
		}
		if err == nil {
			err = errors.New("the service exited")
		}
		t.mu.Lock()
		t.died = err
		t.mu.Unlock()
	}()
	return done
}

// portKey names a container port: network ("tcp", "udp") and number.
type portKey struct {
	network string
	port    int
}

// waitHTTP polls addr until it answers an HTTP request (any status: the smoke suite judges
// the answer), the tunnel ends, or the timeout passes.
func waitHTTP(ctx context.Context, addr string, timeout time.Duration, tunnelDone <-chan struct{}) error {
	if addr == "" {
		return errors.New("plan.Runtime exposes no TCP port")
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: 3 * time.Second}
	var last error
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr, nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			return nil
		}
		last = err
		select {
		case <-tunnelDone:
			return fmt.Errorf("the service's tunnel ended before it answered (last attempt: %v)", last)
		case <-ctx.Done():
			return fmt.Errorf("no HTTP answer on %s within %v (last attempt: %v)", addr, timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Exec runs argv (no shell: the image has none) in a fresh container of the image with the
// same user and mounts, and returns its output and exit status.
func (t *Target) Exec(ctx context.Context, argv ...string) (stdout, stderr []byte, exitCode int, err error) {
	c, err := t.ctr.WithExec(argv, dagger.ContainerWithExecOpts{Expect: dagger.ReturnTypeAny}).Sync(ctx)
	if err != nil {
		return nil, nil, -1, fmt.Errorf("running %q in the image: %w", argv, err)
	}
	if exitCode, err = c.ExitCode(ctx); err != nil {
		return nil, nil, -1, err
	}
	out, err := c.Stdout(ctx)
	if err != nil {
		return nil, nil, -1, err
	}
	errOut, err := c.Stderr(ctx)
	if err != nil {
		return nil, nil, -1, err
	}
	return []byte(out), []byte(errOut), exitCode, nil
}

// Addr is where the container's port is reached on this machine (a forwarded port).
func (t *Target) Addr(network string, port int) string {
	return t.forward[portKey{network, port}]
}

// DialContext connects from this machine to a forwarded port.
func (t *Target) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, address)
}

// noUDP says why the HTTP/3 check cannot run from the host against a Dagger service.
const noUDP = "Dagger forwards only TCP ports to the host, so UDP (QUIC) cannot reach the service from here; the client inside the engine reaches it"

// ListenPacket is not available: the engine forwards only TCP to this machine (see Serve),
// so no local UDP socket reaches the service.
func (t *Target) ListenPacket(ctx context.Context, network, address string) (net.PacketConn, error) {
	return nil, fmt.Errorf("%w: %s", errors.ErrUnsupported, noUDP)
}

// RootFS is the image's root filesystem, exported from the engine.
func (t *Target) RootFS() string { return t.rootfs }

// ProcStatus is not available: a running Dagger service cannot be entered.
func (t *Target) ProcStatus(ctx context.Context) ([]string, error) {
	return nil, fmt.Errorf("%w: a running Dagger service cannot be inspected from the host (its /proc is not reachable)", errors.ErrUnsupported)
}

// MountInfo is not available, for the same reason as ProcStatus.
func (t *Target) MountInfo(ctx context.Context) (string, error) {
	return "", fmt.Errorf("%w: a running Dagger service cannot be inspected from the host (its /proc is not reachable)", errors.ErrUnsupported)
}

// Logs is not available: the engine shows a service's output in its progress stream
// (WithEngineOutput) and gives no API to read it back.
func (t *Target) Logs() ([]byte, error) {
	return nil, fmt.Errorf("%w: the Dagger engine gives no API to read a service's output (it is in the engine's progress stream)", errors.ErrUnsupported)
}

// Exited reports whether the service's tunnel ended (the service exited or failed).
func (t *Target) Exited() (bool, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.died != nil {
		return true, t.died.Error()
	}
	return false, ""
}

// Close stops the tunnels (the engine then stops the service) and removes the exported
// files.
func (t *Target) Close() error {
	if t.stop != nil {
		t.stop()
	}
	t.wg.Wait()
	if t.tmp == "" {
		return nil
	}
	return os.RemoveAll(t.tmp)
}

// writeOCITarball writes img as an OCI image layout (ggcr's layout package) and packs the
// layout into the tarball Container.Import reads.
func writeOCITarball(tarPath, layoutDir string, img v1.Image) error {
	lp, err := layout.Write(layoutDir, empty.Index)
	if err != nil {
		return err
	}
	if err := lp.AppendImage(img); err != nil {
		return err
	}
	f, err := os.Create(tarPath)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.WalkDir(layoutDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == layoutDir {
			return err
		}
		rel, err := filepath.Rel(layoutDir, p)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.RemoveAll(layoutDir)
}
