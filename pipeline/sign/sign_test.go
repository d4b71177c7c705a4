package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

// newKey writes a fresh P-256 key as the PEM file --sign-key takes and returns its public key.
func newKey(t *testing.T) (string, crypto.PublicKey) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, err := cryptoutils.MarshalPrivateKeyToPEM(priv)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, priv.Public()
}

// verify is what `cosign verify --key` does with a key-signed image, written with sigstore's
// libraries and go-containerregistry only (nothing of this package): read REPO:sha256-<hex>.sig,
// and accept when one simple-signing layer's signature verifies under pub and its payload
// names exactly ref's digest and repository.
func verify(t *testing.T, ref name.Digest, pub crypto.PublicKey) error {
	t.Helper()
	h, _ := v1.NewHash(ref.DigestStr())
	img, err := remote.Image(ref.Repository.Tag(h.Algorithm + "-" + h.Hex + ".sig"))
	if err != nil {
		return err
	}
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	verifier, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	var last error = io.EOF
	for _, l := range m.Layers {
		if l.MediaType != "application/vnd.dev.cosign.simplesigning.v1+json" {
			continue
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return err
		}
		rc, err := layer.Compressed()
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(rc)
		rc.Close()
		sig, err := base64.StdEncoding.DecodeString(l.Annotations["dev.cosignproject.cosign/signature"])
		if err != nil {
			return err
		}
		if last = verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); last != nil {
			continue
		}
		var p payload.Cosign
		if last = p.UnmarshalJSON(body); last != nil {
			continue
		}
		if p.Image.DigestStr() != ref.DigestStr() || p.ClaimedIdentity != ref.Repository.Name() {
			last = io.ErrUnexpectedEOF
			t.Logf("payload names %s (%s), want %s", p.Image, p.ClaimedIdentity, ref)
			continue
		}
		return nil
	}
	return last
}

// An index pushed to a registry on loopback and signed with a key the test makes verifies
// under that key's public half, names exactly the signed digest and repository, and does not
// verify under another key; a second key's signature is added beside the first (both verify),
// and signing again with the same key adds nothing.
func TestSignVerifiesWithSigstore(t *testing.T) {
	ref := pushIndex(t)
	keyA, pubA := newKey(t)
	keyB, pubB := newKey(t)
	_, pubOther := newKey(t)
	sa, err := LoadKey(keyA)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := signDigest(ctx, ref, sa); err != nil {
		t.Fatal(err)
	}
	if err := verify(t, ref, pubA); err != nil {
		t.Fatalf("signature by key A does not verify under A's public key: %v", err)
	}
	if err := verify(t, ref, pubOther); err == nil {
		t.Fatal("signature by key A verifies under an unrelated key")
	}
	// Another digest in the same repository is not covered by the signature of ref.
	other, _ := random.Image(64, 1)
	od, _ := other.Digest()
	oref := ref.Repository.Digest(od.String())
	if err := remote.Write(oref, other); err != nil {
		t.Fatal(err)
	}
	if err := verify(t, oref, pubA); err == nil {
		t.Fatal("an unsigned digest verifies")
	}

	sb, err := LoadKey(keyB)
	if err != nil {
		t.Fatal(err)
	}
	sigRef, err := signDigest(ctx, ref, sb)
	if err != nil {
		t.Fatal(err)
	}
	for name, pub := range map[string]crypto.PublicKey{"A": pubA, "B": pubB} {
		if err := verify(t, ref, pub); err != nil {
			t.Errorf("after signing with B, key %s's signature does not verify: %v", name, err)
		}
	}
	again, err := signDigest(ctx, ref, sb)
	if err != nil {
		t.Fatal(err)
	}
	sigImg, err := remote.Image(again)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := sigImg.Manifest(); len(m.Layers) != 2 || again != sigRef {
		t.Errorf("signing again with B: %d signature layers at %s (was %s), want the same 2", len(m.Layers), again, sigRef)
	}
}

// Key files that cannot sign are refused before anything is built, naming the flag and the
// file and saying how to make a usable key; the key's bytes never appear in the message.
func TestLoadKeyRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := "c2VjcmV0LWtleS1ieXRlcw"
	t.Setenv(passwordEnv, "")
	os.Unsetenv(passwordEnv)
	for _, tc := range []struct{ name, path, want string }{
		{"missing", filepath.Join(dir, "nope.pem"), "no such file"},
		{"cosign encrypted without password", write("cosign.key", "-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\n"+secret+"\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), "cosign's encrypted key format, or encrypted PKCS#8) and COSIGN_PASSWORD is not set"},
		{"PKCS#8 encrypted without password", write("enc.pem", "-----BEGIN ENCRYPTED PRIVATE KEY-----\n"+secret+"\n-----END ENCRYPTED PRIVATE KEY-----\n"), "COSIGN_PASSWORD is not set"},
		{"not a key", write("junk.pem", "-----BEGIN PRIVATE KEY-----\n"+secret+"\n-----END PRIVATE KEY-----\n"), "is not a PEM private key"},
		{"too big", write("big.pem", strings.Repeat("x", maxKeyFile+1)), "limit 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadKey(tc.path)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--sign-key "+tc.path) {
				t.Fatalf("err = %v; want one naming --sign-key %s and saying %q", err, tc.path, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error quotes the key file's contents: %v", err)
			}
		})
	}
}

// The README's way to make a key (openssl genpkey, then openssl pkey -pubout for cosign
// verify --key) gives a key --sign-key takes, and key.pub verifies what it signs.
func TestREADMEKeyCommands(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl is not installed (apt-get install openssl): the README's key commands cannot be run")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "key.pem"},
		{"pkey", "-in", "key.pem", "-pubout", "-out", "key.pub"},
	} {
		cmd := exec.Command("openssl", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	s, err := LoadKey(filepath.Join(dir, "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, err := os.ReadFile(filepath.Join(dir, "key.pub"))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"critical":{}}`)
	sig, err := s.SignMessage(bytes.NewReader(msg))
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(msg)); err != nil {
		t.Fatalf("key.pub does not verify what key.pem signs: %v", err)
	}
}

// pushIndex pushes a random two-image index to a registry on loopback and returns its digest
// reference.
func pushIndex(t *testing.T) name.Digest {
	t.Helper()
	reg := registrytest.Host(t)
	idx, err := random.Index(256, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	ref, err := name.NewDigest(reg + "/forge/nginx@" + d.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	return ref
}
