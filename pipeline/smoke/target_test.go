package smoke_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

// limitedTarget is a runtime that can reach the server over TCP but cannot show its output,
// open UDP or look at its processes and mounts, as a Dagger service seen from the host.
type limitedTarget struct {
	addr string
	logs func() ([]byte, error)
}

var errNoPeek = fmt.Errorf("%w: this runtime cannot look inside", errors.ErrUnsupported)

func (t limitedTarget) Exec(context.Context, ...string) ([]byte, []byte, int, error) {
	return nil, nil, -1, errNoPeek
}
func (t limitedTarget) Addr(network string, port int) string { return t.addr }
func (t limitedTarget) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, "tcp", address)
}
func (t limitedTarget) ListenPacket(context.Context, string, string) (net.PacketConn, error) {
	return nil, errNoPeek
}
func (t limitedTarget) RootFS() string                               { return "" }
func (t limitedTarget) ProcStatus(context.Context) ([]string, error) { return nil, errNoPeek }
func (t limitedTarget) MountInfo(context.Context) (string, error)    { return "", errNoPeek }
func (t limitedTarget) Logs() ([]byte, error)                        { return t.logs() }
func (t limitedTarget) Exited() (bool, string)                       { return false, "" }

// closingListener is a TCP listener on loopback that accepts and at once closes every
// connection, so that a check against it fails fast; closed when the test ends.
func closingListener(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l
}

// TestUnsupportedBecomesSkip: what a runtime cannot observe is skipped with the runtime's
// own reason, through the Target alone; a real error or a real finding still fails.
func TestUnsupportedBecomesSkip(t *testing.T) {
	l := closingListener(t)
	mat, err := smoke.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	run := func(logs func() ([]byte, error)) smoke.Report {
		o := smoke.Options{TLS: mat, Expect: smoke.Expect{Modules: []string{"--with-http_v3_module"}}}
		o.StartTimeout, o.CheckTimeout = 2e9, 2e9
		return smoke.Run(context.Background(), limitedTarget{addr: l.Addr().String(), logs: logs}, o)
	}

	rep := run(func() ([]byte, error) { return nil, errNoPeek })
	for _, name := range []string{smoke.CheckHTTP3, smoke.CheckUser, smoke.CheckReadOnly, smoke.CheckErrorLog} {
		r, ok := rep.Result(name)
		if !ok {
			t.Fatalf("no %q in the report", name)
		}
		if r.Status != smoke.Skip || !strings.Contains(r.Detail, "this runtime cannot look inside") {
			t.Errorf("%s: %s %q, want SKIP with the runtime's reason", name, r.Status, r.Detail)
		}
	}

	for _, tc := range []struct {
		name string
		logs func() ([]byte, error)
	}{
		{"broken output", func() ([]byte, error) { return nil, errors.New("pipe closed") }},
		{"emerg line", func() ([]byte, error) { return []byte("2026/12/03 [emerg] 1#1: bind() failed\n"), nil }},
	} {
		r, _ := run(tc.logs).Result(smoke.CheckErrorLog)
		if r.Status != smoke.Fail {
			t.Errorf("%s: error log check %s %q, want FAIL", tc.name, r.Status, r.Detail)
		}
	}
}

// TestEmulatedRunToleratesOnlyTheMissingAIO: under emulation (qemu-user, which lacks Linux
// AIO) nginx's io_setup line passes the error log check and says why; the same line on a
// real kernel, and any other emerg line under emulation, fail.
func TestEmulatedRunToleratesOnlyTheMissingAIO(t *testing.T) {
	l := closingListener(t)
	aio := "2026/12/06 05:02:03 [emerg] 14#14: io_setup() failed (38: Function not implemented)\n"
	other := "2026/12/06 05:02:03 [emerg] 14#14: bind() failed (98: Address already in use)\n"
	for _, tc := range []struct {
		name     string
		emulated bool
		logs     string
		want     smoke.Status
	}{
		{"emulated, io_setup", true, aio + aio, smoke.Pass},
		{"native, io_setup", false, aio, smoke.Fail},
		{"emulated, another emerg", true, aio + other, smoke.Fail},
	} {
		o := smoke.Options{Emulated: tc.emulated}
		o.StartTimeout, o.CheckTimeout = 2e8, 2e8
		logs := func() ([]byte, error) { return []byte(tc.logs), nil }
		r, _ := smoke.Run(context.Background(), limitedTarget{addr: l.Addr().String(), logs: logs}, o).Result(smoke.CheckErrorLog)
		if r.Status != tc.want {
			t.Errorf("%s: %s %q, want %s", tc.name, r.Status, r.Detail, tc.want)
		}
		if tc.want == smoke.Pass && !strings.Contains(r.Detail, "qemu-user has no Linux AIO") {
			t.Errorf("%s: the detail does not say what was tolerated: %q", tc.name, r.Detail)
		}
	}
}

// lateTarget is a server that starts listening a while after it runs, as an emulated nginx
// does, and whose `nginx -t` (run in the server's network namespace, as runc exec does)
// binds the same port: it records whether the server was already listening then.
type lateTarget struct {
	limitedTarget
	listenAt    time.Time
	testedEarly *bool
}

func (t lateTarget) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	if time.Now().Before(t.listenAt) {
		return nil, errors.New("connection refused")
	}
	return t.limitedTarget.DialContext(ctx, network, address)
}

func (t lateTarget) Exec(_ context.Context, argv ...string) ([]byte, []byte, int, error) {
	if len(argv) == 2 && argv[1] == "-t" {
		*t.testedEarly = time.Now().Before(t.listenAt)
		return nil, []byte("nginx: configuration file /etc/nginx/nginx.conf test is successful"), 0, nil
	}
	return nil, nil, -1, errNoPeek
}

// TestConfigTestWaitsForTheServerToListen: nginx -t runs only once the server listens, so
// that its own bind of the configuration's ports cannot take them from a server still
// starting. Without the wait it would run at once, 300 ms before the server listens here.
func TestConfigTestWaitsForTheServerToListen(t *testing.T) {
	l := closingListener(t)
	early := true
	tg := lateTarget{
		limitedTarget: limitedTarget{addr: l.Addr().String(), logs: func() ([]byte, error) { return nil, errNoPeek }},
		listenAt:      time.Now().Add(300 * time.Millisecond),
		testedEarly:   &early,
	}
	o := smoke.Options{StartTimeout: 10 * time.Second, CheckTimeout: 10 * time.Second}
	rep := smoke.Run(context.Background(), tg, o)
	if r, ok := rep.Result(smoke.CheckConfig); !ok || r.Status != smoke.Pass {
		t.Fatalf("nginx -t: %+v", r)
	}
	if early {
		t.Error("nginx -t ran before the server listened: its bind can take the server's ports")
	}
}
