package bench

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The files every server under test serves, relative to the content's html/ directory.
const (
	SmallFile  = "small.html"   // 1 KiB page: TLS keep-alive and handshake scenarios
	StaticFile = "static.html"  // 16 KiB page: plain HTTP keep-alive
	JSONFile   = "gz/data.json" // ~100 KB JSON, gzipped on the fly
	LargeFile  = "large.bin"    // 10 MiB of incompressible bytes over TLS
)

// Sizes of the generated files.
const (
	SmallSize  = 1 << 10
	StaticSize = 16 << 10
	LargeSize  = 10 << 20
)

// writeContent fills dir with html/ (the files above) and tls/ (a fresh self-signed ECDSA
// P-256 certificate for 127.0.0.1 and localhost). The bytes of the html files are the same on
// every call (fixed seeds), so runs on different days serve the same content. Directories
// are world-readable: nginx workers started by root run as an unprivileged user.
func writeContent(dir string) error {
	html := filepath.Join(dir, "html")
	tlsDir := filepath.Join(dir, "tls")
	for _, d := range []string{dir, html, filepath.Join(html, "gz"), tlsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("creating benchmark content: %w", err)
		}
		// MkdirTemp makes 0700 directories; workers running as nobody must traverse them.
		if err := os.Chmod(d, 0o755); err != nil {
			return fmt.Errorf("creating benchmark content: %w", err)
		}
	}
	files := map[string][]byte{
		SmallFile:  page(SmallSize),
		StaticFile: page(StaticSize),
		JSONFile:   jsonDoc(),
		LargeFile:  noise(LargeSize),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(html, name), b, 0o644); err != nil {
			return fmt.Errorf("writing benchmark content %s: %w", name, err)
		}
	}
	certPEM, keyPEM, err := selfSigned()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tlsDir, "cert.pem"), certPEM, 0o644); err != nil {
		return fmt.Errorf("writing benchmark certificate: %w", err)
	}
	// Read by the master only (as root or as the invoking user), never by workers.
	if err := os.WriteFile(filepath.Join(tlsDir, "key.pem"), keyPEM, 0o600); err != nil {
		return fmt.Errorf("writing benchmark key: %w", err)
	}
	return nil
}

// page is an HTML page of exactly n bytes.
func page(n int) []byte {
	head := "<!DOCTYPE html>\n<html><head><title>nginx-forge benchmark</title></head><body>\n"
	tail := "</body></html>\n"
	var b strings.Builder
	b.WriteString(head)
	line := "<p>The quick brown fox jumps over the lazy dog, again and again.</p>\n"
	for b.Len()+len(line)+len(tail) <= n {
		b.WriteString(line)
	}
	b.WriteString(strings.Repeat(" ", n-b.Len()-len(tail)))
	b.WriteString(tail)
	return []byte(b.String())
}

// jsonDoc is an API-like JSON document of about 100 KB: repeated keys and varied values, so
// it compresses the way real JSON does (a few times), not like a run of one byte.
func jsonDoc() []byte {
	r := mrand.New(mrand.NewPCG(1, 2))
	type item struct {
		ID      int      `json:"id"`
		Name    string   `json:"name"`
		Email   string   `json:"email"`
		Active  bool     `json:"active"`
		Score   float64  `json:"score"`
		Tags    []string `json:"tags"`
		Created string   `json:"created"`
	}
	words := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet", "kilo", "lima"}
	var items []item
	size := 0
	for i := 0; size < 100_000; i++ {
		it := item{
			ID:      100000 + i,
			Name:    words[r.IntN(len(words))] + " " + words[r.IntN(len(words))],
			Email:   fmt.Sprintf("user%d@example.org", r.IntN(1_000_000)),
			Active:  r.IntN(2) == 0,
			Score:   float64(r.IntN(100000)) / 100,
			Tags:    []string{words[r.IntN(len(words))], words[r.IntN(len(words))]},
			Created: time.Unix(1_600_000_000+int64(r.IntN(100_000_000)), 0).UTC().Format(time.RFC3339),
		}
		b, _ := json.Marshal(it)
		size += len(b) + 1
		items = append(items, it)
	}
	b, _ := json.Marshal(map[string]any{"items": items, "count": len(items)})
	return append(b, '\n')
}

// noise is n pseudo-random bytes from a fixed seed.
func noise(n int) []byte {
	b := make([]byte, n)
	c := mrand.NewChaCha8([32]byte{'n', 'g', 'i', 'n', 'x', '-', 'f', 'o', 'r', 'g', 'e'})
	_, _ = c.Read(b)
	return b
}

// selfSigned makes a certificate and key in PEM. ECDSA P-256 is what a current deployment
// uses; the handshake then costs an ECDSA signature and an X25519 exchange per connection.
func selfSigned() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generating benchmark key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("creating benchmark certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding benchmark key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), nil
}
