package forge_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
)

// A build with a signing key leaves, for the digest its tags point at, a cosign signature
// (REPO:sha256-<hex>.sig) that verifies with sigstore's libraries under the key's public
// half and names exactly that digest.
func TestPushSignsWhatTheTagsName(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemKey, _ := cryptoutils.MarshalPrivateKeyToPEM(priv)
	req := w.request(dir)
	req.SignKey = filepath.Join(dir, "key.pem")
	if err := os.WriteFile(req.SignKey, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	res, err := runBuild(&fakeEngine{j: w.j}, req, forge.Options{Sink: textSink(&log)})
	if err != nil {
		t.Fatalf("build: %v\n%s", err, log.String())
	}
	ref := res.Published.Digest
	h := strings.TrimPrefix(ref.DigestStr(), "sha256:")
	sigImg, err := remote.Image(ref.Repository.Tag("sha256-" + h + ".sig"))
	if err != nil {
		t.Fatalf("no signature for %s: %v\n%s", ref, err, log.String())
	}
	m, _ := sigImg.Manifest()
	if len(m.Layers) != 1 {
		t.Fatalf("signature manifest has %d layers, want 1", len(m.Layers))
	}
	l, _ := sigImg.LayerByDigest(m.Layers[0].Digest)
	rc, _ := l.Compressed()
	body, _ := io.ReadAll(rc)
	rc.Close()
	sig, _ := base64.StdEncoding.DecodeString(m.Layers[0].Annotations["dev.cosignproject.cosign/signature"])
	v, _ := signature.LoadVerifier(priv.Public(), crypto.SHA256)
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
		t.Fatalf("signature does not verify under the key's public half: %v", err)
	}
	var p payload.Cosign
	if err := p.UnmarshalJSON(body); err != nil {
		t.Fatal(err)
	}
	if p.Image.DigestStr() != ref.DigestStr() || p.Image.Repository.Name() != ref.Repository.Name() {
		t.Errorf("signature names %s, want %s", p.Image, ref)
	}
	for _, tag := range w.tags(t) {
		if strings.HasSuffix(tag, ".sig") || strings.HasPrefix(tag, "sha256-") {
			continue
		}
		got, err := remote.Head(ref.Repository.Tag(tag))
		if err != nil {
			t.Fatal(err)
		}
		if got.Digest.String() != ref.DigestStr() {
			t.Errorf("tag %s names %s, not the signed %s", tag, got.Digest, ref.DigestStr())
		}
	}
	if !strings.Contains(log.String(), "push: signed "+ref.DigestStr()) {
		t.Errorf("log does not say what was signed:\n%s", log.String())
	}
}
