package smoke

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// The checks on 8443: TLS 1.3 with the mounted certificate, the protocol versions refused
// and accepted, session resumption, HTTP/2 by ALPN and HTTP/3 over QUIC.

func (r *runner) tlsConfig(minV, maxV uint16, alpn ...string) *tls.Config {
	return &tls.Config{
		RootCAs:    r.certPool(),
		ServerName: r.o.TLS.ServerName,
		MinVersion: minV,
		MaxVersion: maxV,
		NextProtos: alpn,
	}
}

func (r *runner) tlsDial(ctx context.Context, cfg *tls.Config) (*tls.Conn, error) {
	raw, err := r.t.DialContext(ctx, "tcp", r.t.Addr("tcp", r.o.HTTPSPort))
	if err != nil {
		return nil, err
	}
	// Reads after the handshake are bounded too (the resumption check reads to EOF).
	if d, ok := ctx.Deadline(); ok {
		raw.SetDeadline(d)
	}
	c := tls.Client(raw, cfg)
	if err := c.HandshakeContext(ctx); err != nil {
		raw.Close()
		return nil, err
	}
	return c, nil
}

// tlsPrecondition says why the TLS checks cannot run.
func (r *runner) tlsPrecondition(ctx context.Context) (Status, string, bool) {
	if r.o.TLS == nil {
		return Skip, "no certificate mounted (Options.TLS is nil)", false
	}
	if err := r.waitReady(ctx); err != nil {
		return Fail, "not running (see " + CheckHTTP + ")", false
	}
	return Pass, "", true
}

func checkTLS13(ctx context.Context, r *runner) (Status, string) {
	if st, d, ok := r.tlsPrecondition(ctx); !ok {
		return st, d
	}
	c, err := r.tlsDial(ctx, r.tlsConfig(tls.VersionTLS13, tls.VersionTLS13))
	if err != nil {
		return Fail, "TLS 1.3 handshake: " + err.Error()
	}
	defer c.Close()
	cs := c.ConnectionState()
	if len(cs.PeerCertificates) == 0 || !cs.PeerCertificates[0].Equal(r.o.TLS.Cert) {
		return Fail, "the server did not present the mounted certificate"
	}
	return Pass, fmt.Sprintf("%s, %s, group %s, certificate verified for %s",
		tls.VersionName(cs.Version), tls.CipherSuiteName(cs.CipherSuite), cs.CurveID, r.o.TLS.ServerName)
}

func checkTLSVersions(ctx context.Context, r *runner) (Status, string) {
	if st, d, ok := r.tlsPrecondition(ctx); !ok {
		return st, d
	}
	c, err := r.tlsDial(ctx, r.tlsConfig(tls.VersionTLS12, tls.VersionTLS12))
	if err != nil {
		return Fail, "TLS 1.2 handshake refused: " + err.Error()
	}
	cs := c.ConnectionState()
	c.Close()
	suite12 := tls.CipherSuiteName(cs.CipherSuite)
	c, err = r.tlsDial(ctx, r.tlsConfig(tls.VersionTLS10, tls.VersionTLS11))
	if err == nil {
		c.Close()
		return Fail, "TLS 1.1 handshake accepted: ssl_protocols must not allow it"
	}
	return Pass, "TLS 1.2 (" + suite12 + ") accepted; TLS 1.1 refused"
}

// checkResumption: a second connection resumes the first's session (the shared session
// cache; with OpenSSL TLS 1.3 stateful tickets since ssl_session_tickets is off, with AWS-LC,
// which has no stateful TLS 1.3 resumption, the tickets its nginx.conf turns on).
func checkResumption(ctx context.Context, r *runner) (Status, string) {
	if st, d, ok := r.tlsPrecondition(ctx); !ok {
		return st, d
	}
	cfg := r.tlsConfig(tls.VersionTLS13, tls.VersionTLS13)
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	var resumed bool
	for i := 0; i < 2; i++ {
		c, err := r.tlsDial(ctx, cfg)
		if err != nil {
			return Fail, fmt.Sprintf("handshake %d: %v", i+1, err)
		}
		// TLS 1.3 tickets arrive after the handshake: read until the server has sent them
		// (a request makes it talk).
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", r.o.TLS.ServerName)
		io.Copy(io.Discard, c)
		resumed = c.ConnectionState().DidResume
		c.Close()
	}
	if !resumed {
		return Fail, "the second TLS 1.3 connection did a full handshake: no session resumption"
	}
	return Pass, "second TLS 1.3 connection resumed the first session"
}

func checkHTTP2(ctx context.Context, r *runner) (Status, string) {
	if st, d, ok := r.tlsPrecondition(ctx); !ok {
		return st, d
	}
	c, err := r.tlsDial(ctx, r.tlsConfig(tls.VersionTLS12, 0, "h2", "http/1.1"))
	if err != nil {
		return Fail, err.Error()
	}
	alpn := c.ConnectionState().NegotiatedProtocol
	c.Close()
	if alpn != "h2" {
		return Fail, fmt.Sprintf("ALPN negotiated %q, want h2", alpn)
	}
	tr := &http.Transport{TLSClientConfig: r.tlsConfig(tls.VersionTLS12, 0), ForceAttemptHTTP2: true}
	hc := r.httpClient(tr)
	defer hc.CloseIdleConnections()
	resp, body, err := r.get(ctx, hc, "https://"+r.t.Addr("tcp", r.o.HTTPSPort)+"/", nil)
	if err != nil {
		return Fail, "HTTP/2 request: " + err.Error()
	}
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		return Fail, fmt.Sprintf("GET / over TLS answered %s %s", resp.Proto, resp.Status)
	}
	detail := fmt.Sprintf("ALPN h2; GET / %s %s, %d bytes", resp.Proto, resp.Status, len(body))
	if alt := resp.Header.Get("Alt-Svc"); alt != "" {
		detail += "; Alt-Svc: " + alt
	}
	return Pass, detail
}

func checkHTTP3(ctx context.Context, r *runner) (Status, string) {
	if st, d, ok := r.tlsPrecondition(ctx); !ok {
		return st, d
	}
	if !r.moduleWanted(ctx, HTTP3ModuleFlag) {
		return Skip, "built without --with-http_v3_module"
	}
	addr := r.t.Addr("udp", r.o.HTTPSPort)
	raddr, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return Fail, err.Error()
	}
	local := "127.0.0.1:0"
	if raddr.IP.To4() == nil {
		local = "[::1]:0"
	}
	pc, err := r.t.ListenPacket(ctx, "udp", local)
	if err != nil {
		if st, d, ok := unsupported(err); ok {
			return st, d
		}
		return Fail, "opening a UDP socket: " + err.Error()
	}
	qt := &quic.Transport{Conn: pc}
	defer qt.Close()
	h3 := &http3.Transport{
		TLSClientConfig: r.tlsConfig(tls.VersionTLS13, tls.VersionTLS13),
		// The handshake may take as long as the check itself (the context bounds both):
		// under qemu-user a QUIC handshake's public-key work is emulated, so a fixed few
		// seconds would fail a working image on a busy machine.
		QUICConfig: &quic.Config{HandshakeIdleTimeout: r.o.CheckTimeout, MaxIdleTimeout: r.o.CheckTimeout},
		Dial: func(ctx context.Context, _ string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			return qt.DialEarly(ctx, raddr, tlsCfg, cfg)
		},
	}
	defer h3.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/", nil)
	if err != nil {
		return Fail, err.Error()
	}
	resp, err := h3.RoundTrip(req)
	if err != nil {
		return Fail, "HTTP/3 request to udp " + addr + ": " + err.Error()
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if resp.ProtoMajor != 3 || resp.StatusCode != http.StatusOK {
		return Fail, fmt.Sprintf("GET / over QUIC answered %s %s", resp.Proto, resp.Status)
	}
	return Pass, fmt.Sprintf("GET / %s %s over QUIC, %d bytes", resp.Proto, resp.Status, len(body))
}
