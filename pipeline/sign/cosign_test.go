//go:build integration

package sign

import (
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// cosignTool is the real cosign CLI; without it the test skips, or fails under
// NGINX_FORGE_E2E=1 (.ci/install-deps installs it).
func cosignTool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("cosign")
	if err != nil {
		testenv.Missing(t, "the command cosign", "run .ci/install-deps as root, which installs cosign v2.6.1 from the Go module proxy (GOBIN=/usr/local/bin go install github.com/sigstore/cosign/v2/cmd/cosign@v2.6.1)")
	}
	return p
}

// The real cosign CLI, with a key pair it made itself (cosign generate-key-pair, the
// encrypted cosign.key unlocked by COSIGN_PASSWORD), accepts what SignAndAttest pushed: the
// signature (cosign verify), the SBOM attestation (cosign verify-attestation --type
// spdxjson, whose predicate is the SBOM) and the provenance (--type slsaprovenance1), each
// with cosign.pub and no transparency log. Under another key all three fail; an attestation
// with one byte of its statement changed and pushed again fails, while the untouched one
// still verifies.
func TestCosignVerifiesAttestations(t *testing.T) {
	cosign := cosignTool(t)
	ref := pushIndex(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	t.Setenv(passwordEnv, "cosign test password")
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, other} {
		if out, err := testenv.CosignIn(ctx, cosign, d)("generate-key-pair"); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
	}
	s, err := LoadKey(filepath.Join(dir, "cosign.key"))
	if err != nil {
		t.Fatalf("cosign's own key: %v", err)
	}
	if _, err := SignAndAttest(ctx, ref, s, [][]byte{[]byte(testSBOM)}, testBuild(t)); err != nil {
		t.Fatal(err)
	}
	verify := func(pub string, args ...string) (string, error) {
		full := append(append([]string{}, args...), "--key", pub, "--insecure-ignore-tlog=true", ref.String())
		return testenv.CosignIn(ctx, cosign, dir)(full...)
	}
	checks := [][]string{{"verify"}, {"verify-attestation", "--type", "spdxjson"}, {"verify-attestation", "--type", "slsaprovenance1"}}
	for _, c := range checks {
		out, err := verify("cosign.pub", c...)
		if err != nil {
			t.Fatalf("cosign %s refuses it: %v\n%s", strings.Join(c, " "), err, out)
		}
		t.Logf("cosign %s --key cosign.pub: accepted", strings.Join(c, " "))
		if len(c) > 1 && c[2] == "spdxjson" {
			checkVerifiedSBOM(t, out)
		}
		if out, err := verify(filepath.Join("other", "cosign.pub"), c...); err == nil {
			t.Errorf("cosign %s accepts it under another key:\n%s", strings.Join(c, " "), out)
		}
	}

	tamper(t, ref, "https://spdx.dev/Document")
	if out, err := verify("cosign.pub", checks[1]...); err == nil {
		t.Errorf("cosign verify-attestation --type spdxjson accepts a tampered SBOM statement:\n%s", out)
	} else {
		t.Logf("tampered SBOM attestation refused: %v", lastLine(out))
	}
	if out, err := verify("cosign.pub", checks[2]...); err != nil {
		t.Errorf("the untouched provenance no longer verifies after the SBOM was tampered with: %v\n%s", err, out)
	}
}

// checkVerifiedSBOM: what cosign verify-attestation printed (one DSSE envelope per verified
// attestation) holds the SBOM as its statement's predicate.
func checkVerifiedSBOM(t *testing.T, out string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		var env struct {
			Payload string `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &env) != nil || env.Payload == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st statement
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		checkSBOMStatement(t, st)
		return
	}
	t.Errorf("cosign verify-attestation printed no envelope:\n%s", out)
}

// tamper changes one byte of the statement in ref's attestation of predicateType (inside
// the envelope, whose signature stays) and pushes the attestation manifest again.
func tamper(t *testing.T, ref name.Digest, predicateType string) {
	t.Helper()
	tag, _ := attestationTag(ref)
	img, err := remote.Image(tag)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := img.Manifest()
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	var adds []mutate.Addendum
	changed := false
	for _, l := range m.Layers {
		layer, _ := img.LayerByDigest(l.Digest)
		if l.Annotations["predicateType"] == predicateType && !changed {
			layer = tamperedEnvelope(t, layer)
			changed = true
		}
		adds = append(adds, mutate.Addendum{Layer: layer, Annotations: l.Annotations, MediaType: l.MediaType})
	}
	if !changed {
		t.Fatalf("no %s attestation to tamper with", predicateType)
	}
	out, err := mutate.Append(base, adds...)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, out); err != nil {
		t.Fatal(err)
	}
}

// tamperedEnvelope is l's DSSE envelope with the statement's "SPDX-2.3" made "SPDX-2.4".
func tamperedEnvelope(t *testing.T, l v1.Layer) v1.Layer {
	t.Helper()
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(rc)
	rc.Close()
	var env map[string]any
	if err := json.Unmarshal(raw, &env); err != nil {
		t.Fatal(err)
	}
	payload, _ := base64.StdEncoding.DecodeString(env["payload"].(string))
	i := strings.Index(string(payload), "SPDX-2.3")
	if i < 0 {
		t.Fatalf("statement has no SPDX-2.3 to change: %s", payload)
	}
	payload[i+len("SPDX-2.")] = '4'
	env["payload"] = base64.StdEncoding.EncodeToString(payload)
	b, _ := json.Marshal(env)
	return static.NewLayer(b, dsseMediaType)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// The real cosign CLI, when installed, verifies what signDigest pushed with the key's public half
// (no Rekor entry: --insecure-ignore-tlog), and refuses it under another key: the layout and
// payload are cosign's, not merely self-consistent.
func TestCosignVerifies(t *testing.T) {
	cosign := cosignTool(t)
	ref := pushIndex(t)
	keyFile, pub := newKey(t)
	_, otherPub := newKey(t)
	s, err := LoadKey(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := signDigest(context.Background(), ref, s); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(p crypto.PublicKey) (string, error) {
		pemPub, err := cryptoutils.MarshalPublicKeyToPEM(p)
		if err != nil {
			t.Fatal(err)
		}
		pubFile := filepath.Join(dir, "key.pub")
		if err := os.WriteFile(pubFile, pemPub, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return testenv.CosignIn(ctx, cosign, dir)("verify", "--key", pubFile, "--insecure-ignore-tlog=true", "--allow-insecure-registry", ref.String())
	}
	out, err := run(pub)
	if err != nil {
		t.Fatalf("cosign verify refuses the signature: %v\n%s", err, out)
	}
	if !strings.Contains(out, ref.DigestStr()) {
		t.Errorf("cosign verify output does not name %s:\n%s", ref.DigestStr(), out)
	}
	if out, err := run(otherPub); err == nil {
		t.Errorf("cosign verify accepts the signature under another key:\n%s", out)
	}
}
