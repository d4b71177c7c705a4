package smoke_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
)

func row(name string, st smoke.Status, detail string, unobservable bool) smoke.Result {
	return smoke.Result{Name: name, Status: st, Detail: detail, Unobservable: unobservable}
}

// TestCombine: only a skip the primary could not observe takes the secondary's result,
// which says where it came from; every other verdict of the primary stands.
func TestCombine(t *testing.T) {
	primary := smoke.Report{Results: []smoke.Result{
		row("a", smoke.Pass, "host pass", false),
		row("b", smoke.Fail, "host fail", false),
		row("c", smoke.Skip, "no certificate", false), // a skip that is a verdict
		row("d", smoke.Skip, "host cannot see", true),
		row("e", smoke.Skip, "host cannot see", true),
		row("f", smoke.Skip, "host cannot see", true),
		row("g", smoke.Skip, "host cannot see", true),
	}}
	secondary := smoke.Report{Results: []smoke.Result{
		row("a", smoke.Fail, "engine fail", false),
		row("b", smoke.Pass, "engine pass", false),
		row("c", smoke.Pass, "engine pass", false),
		row("d", smoke.Pass, "engine pass", false),
		row("e", smoke.Fail, "engine fail", false),
		row("f", smoke.Skip, "engine cannot see", true),
		row("h", smoke.Pass, "only engine", false),
	}}
	got := smoke.Combine(primary, secondary, "in the engine")
	want := []smoke.Result{
		row("a", smoke.Pass, "host pass", false),
		row("b", smoke.Fail, "host fail", false),
		row("c", smoke.Skip, "no certificate", false),
		row("d", smoke.Pass, "in the engine: engine pass", false),
		row("e", smoke.Fail, "in the engine: engine fail", false),
		row("f", smoke.Skip, "host cannot see; in the engine: engine cannot see", true),
		row("g", smoke.Skip, "host cannot see", true),
		row("h", smoke.Pass, "in the engine: only engine", false),
	}
	if !slices.Equal(got.Results, want) {
		t.Errorf("Combine =\n%+v\nwant\n%+v", got.Results, want)
	}
	if got.OK() {
		t.Error("a failure the secondary observed where the primary could not did not fail the combination")
	}
}

// TestRunMarksUnobservable: Run marks a skip as unobservable exactly when the Target said
// ErrUnsupported (or had no root filesystem) during that check.
func TestRunMarksUnobservable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	o := smoke.Options{Expect: smoke.Expect{Modules: []string{"--with-http_v3_module"}}, StartTimeout: 2e9, CheckTimeout: 2e9}
	rep := smoke.Run(context.Background(), limitedTarget{addr: l.Addr().String(), logs: func() ([]byte, error) { return nil, errNoPeek }}, o)
	for _, r := range rep.Results {
		switch r.Name {
		case smoke.CheckUser, smoke.CheckReadOnly, smoke.CheckErrorLog, smoke.CheckConfig, smoke.CheckNoShell, smoke.CheckPIE:
			if r.Status != smoke.Skip || !r.Unobservable {
				t.Errorf("%s: %s unobservable=%v, want an unobservable skip", r.Name, r.Status, r.Unobservable)
			}
		case smoke.CheckTLS13, smoke.CheckHTTP3:
			// No certificate: a verdict about the options, not a limit of the runtime.
			if r.Status != smoke.Skip || r.Unobservable {
				t.Errorf("%s: %s unobservable=%v, want a plain skip", r.Name, r.Status, r.Unobservable)
			}
		}
		if r.Unobservable && r.Status != smoke.Skip {
			t.Errorf("%s: %s marked unobservable", r.Name, r.Status)
		}
	}
}

func TestJSONRoundTrip(t *testing.T) {
	rep := smoke.Report{Results: []smoke.Result{
		row("a", smoke.Pass, "ok\nsecond line", false),
		row("b", smoke.Fail, "bad", false),
		row("c", smoke.Skip, "cannot see", true),
	}}
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"passed": 1`) || !strings.Contains(buf.String(), `"status": "SKIP"`) {
		t.Errorf("JSON lacks the counts or statuses:\n%s", buf.String())
	}
	got, err := smoke.ReadJSON(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Results, rep.Results) {
		t.Errorf("round trip = %+v, want %+v", got.Results, rep.Results)
	}
	for _, bad := range []string{``, `{}`, `{"results": []}`, `{"results": [{"name": "a", "status": "OK", "detail": ""}]}`,
		`{"results": [{"name": "a", "status": "PASS", "detail": "", "unobservable": true}]}`, `{"results": [], "extra": 1}`, `not json`} {
		if _, err := smoke.ReadJSON([]byte(bad)); err == nil {
			t.Errorf("ReadJSON(%q) accepted it", bad)
		}
	}
}

func TestClientArgs(t *testing.T) {
	got := smoke.ClientRequest{Address: "nginx", TLSCA: "/etc/nginx/tls/tls.crt", ExpectModules: []string{"--with-http_ssl_module", "--with-http_v3_module"}, UID: 65532,
		Start: []string{"/usr/sbin/nginx", "-g", "daemon off;"}}.Args()
	want := []string{"--address", "nginx", "--tls-ca", "/etc/nginx/tls/tls.crt", "--expect-modules=--with-http_ssl_module,--with-http_v3_module",
		"--uid", "65532", "--json", "--start", "--", "/usr/sbin/nginx", "-g", "daemon off;"}
	if !slices.Equal(got, want) {
		t.Errorf("Args = %q\nwant %q", got, want)
	}
}

// TestRootWatch: a file added, changed or removed on the watched filesystem fails the
// read-only check; nothing written passes. And a started process's processes are observed.
func TestRootWatch(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"keep", "change", "remove"} {
		if err := os.WriteFile(filepath.Join(root, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	w, err := smoke.WatchRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	if r := w.Result(); r.Status != smoke.Pass || r.Name != smoke.CheckReadOnly {
		t.Errorf("nothing written: %s %q", r.Status, r.Detail)
	}
	os.WriteFile(filepath.Join(root, "added"), []byte("x"), 0o644)
	os.WriteFile(filepath.Join(root, "change"), []byte("xy"), 0o644)
	os.Remove(filepath.Join(root, "remove"))
	r := w.Result()
	for _, want := range []string{"added (added)", "change (changed)", "remove (removed)"} {
		if r.Status != smoke.Fail || !strings.Contains(r.Detail, want) {
			t.Errorf("writes while watched: %s %q, want FAIL naming %q", r.Status, r.Detail, want)
		}
	}
	if strings.Contains(r.Detail, "keep") {
		t.Errorf("an untouched file is reported: %q", r.Detail)
	}

	p, err := smoke.StartProcess(smoke.LoopbackHost, []string{"sleep", "30"})
	if err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer p.Stop(5 * time.Second)
	st, err := p.ProcStatus(context.Background())
	if err != nil || len(st) == 0 || !strings.Contains(st[0], "sleep") {
		t.Errorf("ProcStatus = %d entries, %v", len(st), err)
	}
	if _, err := p.MountInfo(context.Background()); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("MountInfo = %v, want ErrUnsupported", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Error(err)
	}
	if exited, _ := p.Exited(); !exited {
		t.Error("Exited is false after Stop")
	}
}

// TestNetworkTarget: everything but the network is unobservable, and a UDP socket for a
// loopback server is opened on the wildcard address (it must reach other hosts too).
func TestNetworkTarget(t *testing.T) {
	n := smoke.Network{Host: "nginx"}
	if got := n.Addr("udp", 8443); got != "nginx:8443" {
		t.Errorf("Addr = %q", got)
	}
	ctx := context.Background()
	if _, _, _, err := n.Exec(ctx, "x"); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Exec = %v", err)
	}
	if _, err := n.Logs(); !errors.Is(err, errors.ErrUnsupported) {
		t.Errorf("Logs = %v", err)
	}
	pc, err := n.ListenPacket(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if ip := pc.LocalAddr().(*net.UDPAddr).IP; !ip.IsUnspecified() {
		t.Errorf("UDP socket bound to %v, want the unspecified address", ip)
	}
}
