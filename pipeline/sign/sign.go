// Package sign signs a pushed image or index the way cosign does with a key (`cosign sign
// --key`), for registries outside GitHub where the workflow's keyless signing does not run:
// the signature is a manifest tagged sha256-<hex of the signed digest>.sig in the same
// repository, each layer a simple-signing payload (the signed digest and repository) with
// its signature in the layer's dev.cosignproject.cosign/signature annotation. `cosign verify
// --key`, Sigstore policy-controller and Kyverno read that layout. The payload and the
// signing come from sigstore's own Go libraries (pkg/signature/payload, pkg/signature), so the
// bytes are the ones cosign signs. Beside it, attest (attest.go) attaches signed in-toto
// attestations the way `cosign attest --key` does (sha256-<hex>.att): the SBOM and the
// build's SLSA provenance (provenance.go).
//
// There is no transparency-log entry (no Rekor upload: a local key signs offline), so
// verifiers must be told not to require one (`cosign verify --insecure-ignore-tlog`).
package sign

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

const (
	// simpleSigningMediaType is the media type of a signature layer (cosign's
	// types.simpleSigningMediaType).
	simpleSigningMediaType types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// signatureAnnotation holds the base64 signature of the layer's payload (cosign's
	// static.SignatureAnnotationKey).
	signatureAnnotation = "dev.cosignproject.cosign/signature"
)

// maxKeyFile bounds what LoadKey reads: a PEM private key is a few hundred bytes.
const maxKeyFile = 64 << 10

// passwordEnv is the environment variable cosign reads the password of its encrypted keys
// from (cosign sign --key cosign.key): LoadKey reads it the same way, so the key and password
// a person already signs with work here unchanged.
const passwordEnv = "COSIGN_PASSWORD"

// LoadKey reads a PEM private key and returns a signer for it: unencrypted PKCS#8, EC or RSA
// (ECDSA P-256 is what cosign and the README's openssl command make), or one encrypted with
// the password in COSIGN_PASSWORD: cosign's own format ("ENCRYPTED SIGSTORE PRIVATE KEY",
// from cosign generate-key-pair) or an encrypted PKCS#8 key ("ENCRYPTED PRIVATE KEY"). The
// build runs unattended, so it never prompts: an encrypted key without COSIGN_PASSWORD is
// refused, saying so. Neither the key's bytes nor the password appear in any error.
func LoadKey(path string) (signature.SignerVerifier, error) {
	raw, err := readKeyFile(path)
	if err != nil {
		return nil, err
	}
	if err := oneKey(path, raw); err != nil {
		return nil, err
	}
	password, hasPassword := os.LookupEnv(passwordEnv)
	encrypted := bytes.Contains(raw, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) || bytes.Contains(raw, []byte("ENCRYPTED COSIGN PRIVATE KEY")) ||
		bytes.Contains(raw, []byte("ENCRYPTED PRIVATE KEY")) || bytes.Contains(raw, []byte("Proc-Type: 4,ENCRYPTED"))
	if encrypted && !hasPassword {
		return nil, fmt.Errorf("--sign-key %s is an encrypted key (cosign's encrypted key format, or encrypted PKCS#8) and %s is not set: set %s to its password, as for cosign sign --key", path, passwordEnv, passwordEnv)
	}
	pf := cryptoutils.SkipPassword
	if encrypted {
		// A non-nil slice even for an empty password: cosign generate-key-pair encrypts with
		// an empty one when COSIGN_PASSWORD is set but empty.
		pf = cryptoutils.StaticPasswordFunc(append([]byte{}, password...))
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(raw, pf)
	switch {
	case err != nil && encrypted:
		// The library's error may quote the file's bytes: name the file, never its contents.
		return nil, fmt.Errorf("--sign-key %s: cannot decrypt it with the password in %s (a wrong password, or not an encrypted private key)", path, passwordEnv)
	case err != nil:
		return nil, fmt.Errorf("--sign-key %s is not a PEM private key (PKCS#8, EC or RSA, or cosign's encrypted key with %s); make one with openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem, or cosign generate-key-pair", path, passwordEnv)
	}
	if k, ok := priv.(*rsa.PrivateKey); ok && k.N.BitLen() < minRSABits {
		return nil, fmt.Errorf("--sign-key %s is a %d-bit RSA key, under the %d bits a signature needs to resist forgery (NIST SP 800-131A): make a new key (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem, or cosign generate-key-pair)", path, k.N.BitLen(), minRSABits)
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", path, err)
	}
	return sv, nil
}

// minRSABits is the smallest RSA key LoadKey signs with.
const minRSABits = 2048

// oneKey refuses a file holding more than one private key: which of them signs would be the
// parser's choice (the first), not the person's. Other PEM blocks (openssl ecparam's "EC
// PARAMETERS") are not keys and may stay.
func oneKey(path string, raw []byte) error {
	n := 0
	for rest := raw; ; {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		if strings.Contains(b.Type, "PRIVATE KEY") {
			n++
		}
	}
	if n > 1 {
		return fmt.Errorf("--sign-key %s holds %d private keys: give a file with the one key that signs", path, n)
	}
	return nil
}

// readKeyFile reads the key file at path: a regular file of at most maxKeyFile bytes.
func readKeyFile(path string) ([]byte, error) {
	f, err := safeio.OpenInput(path)
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", path, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", path, err)
	}
	if fi.Size() > maxKeyFile {
		return nil, fmt.Errorf("--sign-key %s: %d bytes, more than a PEM private key (limit %d): pass the private key file", path, fi.Size(), maxKeyFile)
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxKeyFile))
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", path, err)
	}
	return raw, nil
}

// signatureTag is where cosign looks for the signatures of ref: REPO:sha256-<hex>.sig.
func signatureTag(ref name.Digest) (name.Tag, error) {
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return name.Tag{}, fmt.Errorf("signature tag of %s: %w", ref, err)
	}
	return ref.Repository.Tag(h.Algorithm + "-" + h.Hex + ".sig"), nil
}

// signDigest signs ref (an image or index already in its registry) with s and pushes the
// signature to ref's repository under signatureTag(ref). A signature manifest already there
// (an earlier signing of the same digest, by this key or another) keeps its layers: the new
// signature is added beside them, as cosign does, unless a signature of the same payload by
// the same key is already there (ECDSA signatures differ at each signing, so a rerun of the
// same build would otherwise pile up layers). It returns the signature manifest's digest
// reference.
func signDigest(ctx context.Context, ref name.Digest, s signature.SignerVerifier, opts ...remote.Option) (name.Digest, error) {
	opts = append([]remote.Option{remote.WithContext(ctx)}, opts...)
	body, err := payload.Cosign{Image: ref}.MarshalJSON()
	if err != nil {
		return name.Digest{}, fmt.Errorf("signature payload for %s: %w", ref, err)
	}
	sig, err := s.SignMessage(bytes.NewReader(body))
	if err != nil {
		return name.Digest{}, fmt.Errorf("signing %s: %w", ref, err)
	}
	b64 := base64.StdEncoding.EncodeToString(sig)
	tag, err := signatureTag(ref)
	if err != nil {
		return name.Digest{}, err
	}

	// cosign's signature manifests are OCI images over an empty config.
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	existing, err := remote.Image(tag, opts...)
	var terr *transport.Error
	switch {
	case err == nil:
		base = existing
		m, err := existing.Manifest()
		if err != nil {
			return name.Digest{}, fmt.Errorf("reading the signatures of %s (%s): %w", ref, tag, err)
		}
		for _, l := range m.Layers {
			if signedBy(existing, l, body, s) {
				d, err := existing.Digest()
				if err != nil {
					return name.Digest{}, err
				}
				return tag.Repository.Digest(d.String()), nil
			}
		}
	case errors.As(err, &terr) && terr.StatusCode == 404:
	default:
		return name.Digest{}, fmt.Errorf("reading the signatures of %s (%s): %w", ref, tag, err)
	}
	signed, err := mutate.Append(base, mutate.Addendum{
		Layer:       static.NewLayer(body, simpleSigningMediaType),
		Annotations: map[string]string{signatureAnnotation: b64},
	})
	if err != nil {
		return name.Digest{}, fmt.Errorf("signature manifest for %s: %w", ref, err)
	}
	return pushManifest(tag, signed, true, "the signature of "+ref.String(), opts)
}

// pushManifest writes img to tag when changed, and names it by digest in tag's repository:
// the signature and attestation manifests cosign's layout keeps beside an image.
func pushManifest(tag name.Tag, img v1.Image, changed bool, what string, opts []remote.Option) (name.Digest, error) {
	if changed {
		if err := remote.Write(tag, img, opts...); err != nil {
			return name.Digest{}, fmt.Errorf("pushing %s to %s: %w", what, tag, err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return tag.Repository.Digest(d.String()), nil
}

// signedBy says whether layer l of the signature manifest sig is body signed by v's key.
func signedBy(sig v1.Image, l v1.Descriptor, body []byte, v signature.Verifier) bool {
	if l.MediaType != simpleSigningMediaType || l.Size != int64(len(body)) {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(l.Annotations[signatureAnnotation])
	if err != nil {
		return false
	}
	layer, err := sig.LayerByDigest(l.Digest)
	if err != nil {
		return false
	}
	rc, err := layer.Compressed()
	if err != nil {
		return false
	}
	defer rc.Close()
	got, err := io.ReadAll(io.LimitReader(rc, int64(len(body))+1))
	if err != nil || !bytes.Equal(got, body) {
		return false
	}
	return v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(body)) == nil
}
