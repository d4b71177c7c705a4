package smoke

import (
	"bufio"
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// TLS is the certificate the test generates and mounts at /etc/nginx/tls, and the pool
// that trusts it.
type TLS struct {
	CertPEM, KeyPEM []byte
	Cert            *x509.Certificate
	Pool            *x509.CertPool
	// ServerName is the name the clients ask for (in the certificate's SANs).
	ServerName string
}

// serverName is the name NewTLS's certificate is for.
const serverName = "localhost"

// NewTLS makes a fresh self-signed ECDSA P-256 certificate for localhost and 127.0.0.1,
// valid for a day.
func NewTLS() (*TLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating TLS key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating certificate serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: serverName, Organization: []string{"nginx-forge smoke test"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{serverName},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("creating TLS certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing the generated certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding TLS key: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &TLS{
		CertPEM:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:     pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Cert:       cert,
		Pool:       pool,
		ServerName: serverName,
	}, nil
}

// WriteDir writes the directory users mount at /etc/nginx/tls: tls.crt, tls.key and
// tls.conf (conf, see TLSConf), and the extra files given (the catalogue modules' probes,
// probeFiles). The key is readable only by uid/gid (the container's user), as a Kubernetes
// secret with fsGroup would be; ownership is only set when running as root.
func (t *TLS) WriteDir(dir string, conf []byte, uid, gid int, extra ...map[string][]byte) error {
	files := []struct {
		name string
		data []byte
		mode os.FileMode
	}{
		{"tls.crt", t.CertPEM, 0o644},
		{"tls.key", t.KeyPEM, 0o600},
		{"tls.conf", conf, 0o644},
	}
	for _, e := range extra {
		for _, name := range slices.Sorted(maps.Keys(e)) {
			files = append(files, struct {
				name string
				data []byte
				mode os.FileMode
			}{name, e[name], 0o644})
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("making TLS directory: %w", err)
	}
	for _, f := range files {
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, f.data, f.mode); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		if os.Geteuid() == 0 {
			if err := os.Chown(p, uid, gid); err != nil {
				return fmt.Errorf("chown %s: %w", p, err)
			}
		}
	}
	return nil
}

// The shipped nginx.conf documents tls.conf between these markers, as comment lines.
const (
	tlsConfBegin = "# ---- BEGIN tls.conf ----"
	tlsConfEnd   = "# ---- END tls.conf ----"
)

// TLSConf extracts the tls.conf documented in an nginx.conf (the image's own, so the test
// proves the documentation works). Without http3 the QUIC lines are dropped, as the
// documentation says to do for a build without the http_v3 module.
func TLSConf(nginxConf []byte, http3 bool) ([]byte, error) {
	var out bytes.Buffer
	in := false
	found := false
	var pending []string
	sc := bufio.NewScanner(bytes.NewReader(nginxConf))
	for sc.Scan() {
		line := sc.Text()
		switch strings.TrimSpace(line) {
		case tlsConfBegin:
			in = true
			continue
		case tlsConfEnd:
			if in {
				found = true
			}
			in = false
			continue
		}
		if !in {
			continue
		}
		body, ok := strings.CutPrefix(line, "#")
		if !ok {
			return nil, fmt.Errorf("nginx.conf: line %q inside the tls.conf block is not a comment", line)
		}
		body = strings.TrimPrefix(body, " ")
		// Comments are held until the line they describe: dropped with it, or written.
		if strings.HasPrefix(strings.TrimSpace(body), "#") {
			pending = append(pending, body)
			continue
		}
		if !http3 && (strings.Contains(body, " quic") || strings.Contains(body, "Alt-Svc")) {
			pending = nil
			continue
		}
		for _, c := range pending {
			out.WriteString(c + "\n")
		}
		pending = nil
		out.WriteString(body + "\n")
	}
	if !found || out.Len() == 0 {
		return nil, errors.New("nginx.conf has no tls.conf block (between \"" + tlsConfBegin + "\" and \"" + tlsConfEnd + "\")")
	}
	return out.Bytes(), nil
}

// PrepareTLS makes the directory every runner mounts read-only at plan.Runtime.TLSDir to
// turn on HTTPS, HTTP/2 and HTTP/3 the way users do: a fresh certificate (NewTLS) and the
// tls.conf documented in the image's own nginx.conf (nginxConf, so the test proves the
// documentation works), its QUIC lines kept when http3 (decide it with Expect.Wants and
// HTTP3ModuleFlag); wants, when not nil, says which catalogue modules the image must have,
// whose probes (probeFiles) the directory then carries too. The directory is new, under parent ("": the system's temporary directory),
// and searchable by the container's user; the key is readable only by uid/gid (WriteDir).
// The runner mounts dir, runs the suite with Options.TLS set to the material, and removes
// dir afterwards.
func PrepareTLS(nginxConf []byte, http3 bool, parent string, uid, gid int, wants func(flag string) bool) (mat *TLS, dir string, err error) {
	conf, err := TLSConf(nginxConf, http3)
	if err != nil {
		return nil, "", fmt.Errorf("the image's nginx.conf: %w", err)
	}
	probes := map[string][]byte{}
	if wants != nil {
		if probes, err = probeFiles(wants); err != nil {
			return nil, "", err
		}
	}
	if mat, err = NewTLS(); err != nil {
		return nil, "", err
	}
	if dir, err = os.MkdirTemp(parent, "nginx-forge-smoke-tls-"); err != nil {
		return nil, "", fmt.Errorf("making the TLS directory: %w", err)
	}
	// MkdirTemp makes it 0700; the container's user must be able to enter it.
	if err := os.Chmod(dir, 0o755); err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("making the TLS directory: %w", err)
	}
	if err := mat.WriteDir(dir, conf, uid, gid, probes); err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return mat, filepath.Clean(dir), nil
}
