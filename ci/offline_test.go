package main

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// offlineDNS makes this process's resolver ask a DNS server of the test's own on loopback,
// which answers every question "no such host" (NXDOMAIN), as a machine without the network's
// DNS does: a name like api.github.com then fails the way it fails offline, and no query
// leaves this machine. It returns the number of questions answered.
func offlineDNS(t *testing.T) *atomic.Int64 {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var asked atomic.Int64
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp := nxdomain(buf[:n]); resp != nil {
				asked.Add(1)
				pc.WriteTo(resp, from)
			}
		}
	}()
	oldGo, oldDial := net.DefaultResolver.PreferGo, net.DefaultResolver.Dial
	net.DefaultResolver.PreferGo = true
	net.DefaultResolver.Dial = func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}
	t.Cleanup(func() {
		net.DefaultResolver.PreferGo, net.DefaultResolver.Dial = oldGo, oldDial
		pc.Close()
	})
	return &asked
}

// nxdomain is the answer "no such host" to the DNS query q: its header with the response,
// recursion-available and name-error bits set, and its question; nil for what is not a
// query of one question.
func nxdomain(q []byte) []byte {
	if len(q) < 12 || q[2]&0x80 != 0 || q[4] != 0 || q[5] != 1 {
		return nil
	}
	end := 12
	for end < len(q) && q[end] != 0 {
		end += int(q[end]) + 1
	}
	end += 5 // the root label, QTYPE, QCLASS
	if end > len(q) {
		return nil
	}
	r := append([]byte(nil), q[:end]...)
	r[2] = 0x80 | q[2]&0x01 // QR, and RD as asked
	r[3] = 0x80 | 3         // RA, RCODE 3: NXDOMAIN
	r[6], r[7], r[8], r[9], r[10], r[11] = 0, 0, 0, 0, 0, 0
	return r
}

// refusedAddr is a loopback address where nothing listens (a listener's, closed).
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// untrustedTLS is a TLS server on loopback whose certificate this machine does not trust.
func untrustedTLS(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// linesNaming returns the lines of s that contain sub.
func linesNaming(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// Issue 40: offline, check-updates called a DNS failure not transient with fixes about HOME
// and XDG_CACHE_HOME, once per component and again in a 230-column table. Each server is
// now one line: what kind of failure, transient or not (and retried only then), what failed
// and the flag that is the way out.
func TestCheckUpdatesOfflineNamesEachServerOnce(t *testing.T) {
	notInActions(t)
	asked := offlineDNS(t)
	s := upstreamtest.NewScenario(t)
	var out, errb strings.Builder
	code := run(context.Background(), []string{"check-updates", "-v", "--lock", s.LockFile, "--cache", t.TempDir()}, &out, &errb)
	all := out.String() + errb.String()
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, all)
	}
	if asked.Load() == 0 {
		t.Fatal("the loopback DNS server was never asked: did the lookups go elsewhere?")
	}
	for host, flag := range map[string]string{
		"api.github.com": "--github-api URL", "nginx.org": "--nginx-org URL",
		"index.docker.io": "--registry HOST (or skip the images: --skip-images)", "gcr.io": "--registry HOST (or skip the images: --skip-images)",
	} {
		lines := linesNaming(errb.String(), host+": ")
		if len(lines) != 1 {
			t.Errorf("%d lines name %s, want 1:\n%s", len(lines), host, errb.String())
			continue
		}
		if l := lines[0]; !strings.Contains(l, host+": DNS failure (no such host), not transient: failed for ") ||
			!strings.Contains(l, "cannot resolve "+host+" (offline, or no DNS for it)") || !strings.HasSuffix(l, flag) {
			t.Errorf("the line of %s does not say DNS failure, not transient, offline, and %s:\n%s", host, flag, l)
		}
	}
	if l := linesNaming(errb.String(), "api.github.com: "); len(l) == 1 && !strings.Contains(l[0], "failed for zlib, pcre2, openssl, nginx, brotli, ngx_brotli, zstd;") {
		t.Errorf("the GitHub line does not name the four lookups:\n%s", l[0])
	}
	for _, unrelated := range []string{"HOME", "XDG_CACHE_HOME", "retrying", "gave up"} {
		if strings.Contains(all, unrelated) {
			t.Errorf("the output says %q (a DNS failure is neither about it nor retried):\n%s", unrelated, all)
		}
	}
	// The table (without -v, whose lines quote URLs) fits 100 columns.
	out.Reset()
	if code := run(context.Background(), []string{"check-updates", "--lock", s.LockFile}, &out, io.Discard); code != 1 || !strings.Contains(out.String(), "COMPONENT") {
		t.Fatalf("exit %d, want 1 and the table:\n%s", code, out.String())
	}
	// The title names the lock file as given, as long as the caller's path (under act, a
	// temporary directory several levels deep): it counts as a short word here.
	for _, l := range strings.Split(out.String(), "\n") {
		if n := len(strings.ReplaceAll(l, s.LockFile, "LOCK")); n > 100 {
			t.Errorf("a line of %d columns in the table (the lock's path counted as LOCK):\n%s", n, out.String())
		}
	}
}

// A refused connection is transient and retried; a TLS certificate that is not trusted is
// not, and is not; each names its server once with the flag that names it.
func TestCheckUpdatesNamesRefusedAndTLSFailures(t *testing.T) {
	notInActions(t)
	asked := offlineDNS(t)
	s := upstreamtest.NewScenario(t)
	refused, tlsURL := refusedAddr(t), untrustedTLS(t)
	var out, errb strings.Builder
	code := run(context.Background(), []string{"check-updates", "-v", "--lock", s.LockFile, "--cache", t.TempDir(),
		"--github-api", "http://" + refused, "--nginx-org", tlsURL, "--registry", "registry.example.invalid"}, &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s%s", code, out.String(), errb.String())
	}
	tlsHost := strings.TrimPrefix(tlsURL, "https://")
	for _, c := range []struct{ host, says, fix string }{
		{refused, refused + ": connection refused, transient: failed for zlib, pcre2, openssl, nginx", "check the port in --github-api URL"},
		{tlsHost, tlsHost + ": TLS error (x509: certificate signed by unknown authority), not transient: failed for nginx", "name a server it trusts with --nginx-org URL"},
		{"registry.example.invalid", "registry.example.invalid: DNS failure (no such host), not transient: failed for builder image, runtime image", "check the host name in --registry HOST"},
	} {
		lines := linesNaming(errb.String(), c.host+": ")
		if len(lines) != 1 || !strings.Contains(lines[0], c.says) || !strings.Contains(lines[0], c.fix) {
			t.Errorf("want one line saying %q and %q, got:\n%s", c.says, c.fix, strings.Join(lines, "\n"))
		}
	}
	if asked.Load() == 0 {
		t.Error("the registry's name was not looked up on the loopback DNS server")
	}
	// -v prints each retry: the refused API was retried, the untrusted and unresolved
	// servers were not.
	retries := linesNaming(out.String(), "retrying in")
	if len(retries) == 0 {
		t.Errorf("the refused connection was not retried:\n%s", out.String())
	}
	for _, l := range retries {
		if !strings.Contains(l, refused) {
			t.Errorf("retried what is not transient: %s", l)
		}
	}
}

// Issue 40: an offline build retried each source's DNS failure four times, printed it once
// per file, and did not mention --mirror. Each server is now one line, retried only when
// transient, with the way out.
func TestBuildNamesEachUnreachableServerOnce(t *testing.T) {
	notInActions(t)
	offlineDNS(t)
	refused, tlsURL := refusedAddr(t), untrustedTLS(t)
	tlsHost := strings.TrimPrefix(tlsURL, "https://")
	const components = "the downloads of zlib 1.3.1, pcre2 10.46, openssl 3.5.7, nginx 1.26.3, "
	for _, c := range []struct {
		name, mirror string
		want         []string
	}{
		{"no mirror, no DNS", "", []string{
			"github.com: DNS failure (no such host), not transient, not retried: the downloads of pcre2 10.46, openssl 3.5.7",
			"this machine cannot resolve github.com (offline, or no DNS for it): fetch from a mirror instead: --mirror URL",
		}},
		{"a mirror whose name does not resolve", "http://mirror.example.invalid", []string{
			"mirror.example.invalid: DNS failure (no such host), not transient, not retried: " + components,
			"check its spelling in --mirror URL",
		}},
		{"a mirror with a certificate not trusted", tlsURL, []string{
			tlsHost + ": TLS error (x509: certificate signed by unknown authority), not transient, not retried: " + components,
			"a plain http:// URL is fine",
		}},
		{"a mirror where nothing listens", "http://" + refused, []string{
			refused + ": connection refused, transient, tried 4 times: " + components,
			"start its server (docs/offline.md) or fix the port in --mirror URL",
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"build", "--engine", "host", "--no-smoke", "--tree", filepath.Join(t.TempDir(), "tree"),
				"--lock", trixieLockPath, "--cache", t.TempDir()}
			if c.mirror != "" {
				args = append(args, "--mirror", c.mirror)
			}
			code, _, stderr := runWithin(t, 60e9, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1:\n%s", code, stderr)
			}
			for _, w := range c.want {
				if lines := linesNaming(stderr, w); len(lines) != 1 {
					t.Errorf("%d lines say %q, want 1:\n%s", len(lines), w, stderr)
				}
			}
			if strings.Contains(stderr, "gave up after") || strings.Contains(stderr, "HOME") {
				t.Errorf("a line per file, or an unrelated fix:\n%s", stderr)
			}
		})
	}
}
