package sign

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// signsFor says whether s's signature of a message verifies under pub.
func signsFor(t *testing.T, s signature.Signer, pub crypto.PublicKey) error {
	t.Helper()
	msg := []byte(`{"critical":{}}`)
	sig, err := s.SignMessage(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg))
}

// The key formats a person signing with cosign already has: cosign's encrypted key (as
// cosign generate-key-pair writes it, with sigstore's encoder) with its password in
// COSIGN_PASSWORD, also an empty one; a SEC 1 "EC PRIVATE KEY"; and an encrypted PKCS#8 key
// from openssl. A wrong password is refused naming the file and the variable, never the
// password.
func TestLoadKeyFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, body []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, body, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, password := range []string{"correct horse", ""} {
		privPEM, pubPEM, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte(password)))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(privPEM, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) {
			t.Fatalf("sigstore's encoder wrote %.40q, not cosign's encrypted format", privPEM)
		}
		key := write("cosign.key", privPEM)
		pub, _ := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
		t.Setenv(passwordEnv, password)
		s, err := LoadKey(key)
		if err != nil {
			t.Fatalf("cosign key with password %q: %v", password, err)
		}
		if err := signsFor(t, s, pub); err != nil {
			t.Errorf("cosign key with password %q does not sign for cosign.pub: %v", password, err)
		}
		t.Setenv(passwordEnv, "wrong-password-xyzzy")
		_, err = LoadKey(key)
		if err == nil || !strings.Contains(err.Error(), "--sign-key "+key+": cannot decrypt it with the password in COSIGN_PASSWORD") || strings.Contains(err.Error(), "xyzzy") {
			t.Errorf("wrong password: err = %v, want it refused naming the file and COSIGN_PASSWORD, not the password", err)
		}
	}

	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, _ := x509.MarshalECPrivateKey(priv)
	s, err := LoadKey(write("ec.pem", pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})))
	if err != nil {
		t.Fatalf("EC PRIVATE KEY: %v", err)
	}
	if err := signsFor(t, s, priv.Public()); err != nil {
		t.Errorf("EC PRIVATE KEY does not sign for its public key: %v", err)
	}

	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed (apt-get install openssl): the encrypted PKCS#8 key cannot be made")
	}
	cmd := exec.Command("openssl", "genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-aes-256-cbc", "-pass", "pass:pkcs8 secret", "-out", "enc.pem")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl genpkey: %v\n%s", err, out)
	}
	pubOut, err := exec.Command("openssl", "pkey", "-in", filepath.Join(dir, "enc.pem"), "-passin", "pass:pkcs8 secret", "-pubout").Output()
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubOut)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(passwordEnv, "pkcs8 secret")
	if s, err = LoadKey(filepath.Join(dir, "enc.pem")); err != nil {
		t.Fatalf("encrypted PKCS#8 key: %v", err)
	}
	if err := signsFor(t, s, pub); err != nil {
		t.Errorf("encrypted PKCS#8 key does not sign for its public key: %v", err)
	}
}
