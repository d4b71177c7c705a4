//go:build integration

package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// hostNginx is the built nginx (testenv.BuiltTree) set up to run on this machine's
// loopback: the tree copied, its nginx.conf's container paths moved under the copy (the
// writable directories outside it), the documented tls.conf with a fresh certificate, free
// ports for 8080 and 8443 (TCP and UDP).
type hostNginx struct {
	tree, conf, ca   string
	http, https      int
	startArgv        []string // the foreground server
	writable, prefix string
}

func setupHostNginx(t *testing.T) hostNginx {
	t.Helper()
	built := testenv.BuiltTree(t)
	base, err := os.MkdirTemp("", "ci-smoke-address-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	// nginx's workers may run as another user: every directory on the way must be searchable.
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	h := hostNginx{tree: filepath.Join(base, "tree"), writable: filepath.Join(base, "writable")}
	if out, err := exec.Command("cp", "-a", built, h.tree).CombinedOutput(); err != nil {
		t.Fatalf("copying the tree: %v\n%s", err, out)
	}
	for _, d := range []string{"cache", "run"} {
		if err := os.MkdirAll(filepath.Join(h.writable, d), 0o777); err != nil {
			t.Fatal(err)
		}
		os.Chmod(filepath.Join(h.writable, d), 0o777)
	}
	h.http, h.https = freePorts(t)
	paths := strings.NewReplacer(
		"/etc/nginx", filepath.Join(h.tree, "etc", "nginx"),
		"/var/cache/nginx", filepath.Join(h.writable, "cache"),
		"/run/nginx", filepath.Join(h.writable, "run"),
		"8080", strconv.Itoa(h.http),
		"8443", strconv.Itoa(h.https),
	)
	h.conf = filepath.Join(h.tree, "etc", "nginx", "nginx.conf")
	orig, err := os.ReadFile(h.conf)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf, err := smoke.TLSConf(orig, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.conf, []byte(paths.Replace(string(orig))), 0o644); err != nil {
		t.Fatal(err)
	}
	mat, err := smoke.NewTLS()
	if err != nil {
		t.Fatal(err)
	}
	tlsDir := filepath.Join(h.tree, "etc", "nginx", "tls")
	// Readable by the workers whatever user they run as: a throwaway key.
	if err := mat.WriteDir(tlsDir, []byte(paths.Replace(string(tlsConf))), os.Getuid(), os.Getgid()); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Join(tlsDir, "tls.key"), 0o644)
	h.ca = filepath.Join(tlsDir, smoke.TLSCertFile)
	// The binary names the image's user (nonroot), which this machine may lack.
	h.startArgv = []string{filepath.Join(h.tree, "usr", "sbin", "nginx"), "-p", h.tree + "/", "-c", h.conf, "-g", hostGlobals}
	return h
}

// freePorts finds a free TCP port and a second one free for both TCP and UDP.
func freePorts(t *testing.T) (int, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := 0; i < 50; i++ {
		l2, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l2.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		l2.Close()
		if err == nil {
			u.Close()
			return l.Addr().(*net.TCPAddr).Port, port
		}
	}
	t.Fatal("no port free for both TCP and UDP")
	return 0, 0
}

// smokeJSON runs the in-engine smoke client (smoke.ClientMain, the main of
// pipeline/smoke/cmd/smokeclient) with args, or, with viaCI, `ci smoke` with the same flags.
func smokeJSON(t *testing.T, args []string, viaCI bool) smoke.Report {
	t.Helper()
	var stdout, stderr bytes.Buffer
	what := "smokeclient"
	var code int
	if viaCI {
		what = "ci smoke"
		code = run(context.Background(), append([]string{"smoke"}, args...), &stdout, &stderr)
	} else {
		code = smoke.ClientMain(context.Background(), args, &stdout, &stderr)
	}
	if code != 0 && code != 1 {
		t.Fatalf("%s %q: exit %d\n%s", what, args, code, stderr.String())
	}
	rep, err := smoke.ReadJSON(stdout.Bytes())
	if err != nil {
		t.Fatalf("%s %q printed no JSON report: %v\n%s\n%s", what, args, err, stdout.String(), stderr.String())
	}
	var sb strings.Builder
	rep.Print(&sb)
	t.Logf("%s %s:\n%s", what, strings.Join(args, " "), sb.String())
	return rep
}

func wantRows(t *testing.T, rep smoke.Report, st smoke.Status, unobservable bool, names ...string) {
	t.Helper()
	for _, n := range names {
		r, ok := rep.Result(n)
		if !ok {
			t.Errorf("no %q row", n)
			continue
		}
		if r.Status != st || r.Unobservable != unobservable {
			t.Errorf("%s: %s (unobservable %v) %q, want %s (unobservable %v)", n, r.Status, r.Unobservable, r.Detail, st, unobservable)
		}
	}
}

// TestSmokeAddressRealNginx runs the in-engine client's two modes (smoke.ClientMain), with
// the argv the Dagger engine builds (smoke.ClientRequest.Args), against the real built nginx
// on loopback, and `ci smoke --address` with the same flags:
// HTTP, TLS, HTTP/2 and HTTP/3 over UDP pass; in address mode the rest is unobservable; with
// --start the client also observes the server's processes, its output and its writes.
func TestSmokeAddressRealNginx(t *testing.T) {
	h := setupHostNginx(t)
	expect, err := smokeExpect(testLock, "")
	if err != nil {
		t.Fatal(err)
	}
	req := smoke.ClientRequest{Address: smoke.LoopbackHost, TLSCA: h.ca, HTTPPort: h.http, HTTPSPort: h.https, ExpectModules: expect.Modules}

	t.Run("address", func(t *testing.T) {
		srv, err := smoke.StartProcess(smoke.LoopbackHost, h.startArgv)
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Stop(10 * time.Second)
		// The client the engine runs, and `ci smoke --address` with the same flags.
		for _, viaCI := range []bool{false, true} {
			rep := smokeJSON(t, req.Args(), viaCI)
			wantRows(t, rep, smoke.Pass, false, networkChecks...)
			wantRows(t, rep, smoke.Skip, true, smoke.CheckUser, smoke.CheckReadOnly, smoke.CheckErrorLog, smoke.CheckConfig, smoke.CheckNoShell)
		}
		if logs, _ := srv.Logs(); strings.Contains(string(logs), "[emerg]") {
			t.Errorf("nginx: %s", logs)
		}
	})

	t.Run("start", func(t *testing.T) {
		req := req
		req.Start = h.startArgv
		req.WatchRoot = h.tree
		rep := smokeJSON(t, req.Args(), false)
		wantRows(t, rep, smoke.Pass, false, networkChecks...)
		wantRows(t, rep, smoke.Pass, false, smoke.CheckErrorLog, smoke.CheckReadOnly)
		if r, _ := rep.Result(smoke.CheckReadOnly); !strings.Contains(r.Detail, "watched for writes instead") {
			t.Errorf("read-only row does not say how it was observed: %q", r.Detail)
		}
		// The processes were observed (here the master runs as root, so the check fails).
		if r, _ := rep.Result(smoke.CheckUser); r.Status == smoke.Skip || !strings.Contains(r.Detail, "nginx") {
			t.Errorf("user row: %s %q, want the server's processes observed", r.Status, r.Detail)
		}
		wantRows(t, rep, smoke.Skip, true, smoke.CheckConfig)
	})

	t.Run("start writes to the root", func(t *testing.T) {
		// The pid file moved onto the watched tree: the read-only row must fail.
		conf, _ := os.ReadFile(h.conf)
		bad := strings.Replace(string(conf), "pid "+filepath.Join(h.writable, "run"), "pid "+filepath.Join(h.tree, "run"), 1)
		if bad == string(conf) {
			t.Fatal("no pid directive to move")
		}
		badConf := filepath.Join(h.tree, "etc", "nginx", "writes.conf")
		os.MkdirAll(filepath.Join(h.tree, "run"), 0o777)
		if err := os.WriteFile(badConf, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		req := req
		req.Start = []string{h.startArgv[0], "-p", h.tree + "/", "-c", badConf, "-g", hostGlobals}
		req.WatchRoot = h.tree
		rep := smokeJSON(t, req.Args(), false)
		// nginx removes its pid file when it stops; the directory it was written in changed.
		if r, _ := rep.Result(smoke.CheckReadOnly); r.Status != smoke.Fail || !strings.Contains(r.Detail, filepath.Join(h.tree, "run")) {
			t.Errorf("read-only row with a pid file on the root: %s %q, want FAIL naming it", r.Status, r.Detail)
		}
	})
}

var networkChecks = []string{smoke.CheckHTTP, smoke.CheckHealthz, smoke.CheckGzip, smoke.CheckTLS13,
	smoke.CheckTLSVersions, smoke.CheckResumption, smoke.CheckHTTP2, smoke.CheckHTTP3}

// hostGlobals are the entrypoint's -g directives plus a user this machine has.
const hostGlobals = "daemon off; user nobody nogroup;"
