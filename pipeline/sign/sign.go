// Package sign signs a pushed image or index the way cosign does with a key (`cosign sign
// --key`), for registries outside GitHub where the workflow's keyless signing does not run:
// the signature is a manifest tagged sha256-<hex of the signed digest>.sig in the same
// repository, each layer a simple-signing payload (the signed digest and repository) with
// its signature in the layer's dev.cosignproject.cosign/signature annotation. `cosign verify
// --key`, Sigstore policy-controller and Kyverno read that layout. The payload and the
// signing come from sigstore's own Go libraries (pkg/signature/payload, pkg/signature), so the
// bytes are the ones cosign signs.
//
// There is no transparency-log entry (no Rekor upload: a local key signs offline), so
// verifiers must be told not to require one (`cosign verify --insecure-ignore-tlog`).
package sign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

const (
	// SimpleSigningMediaType is the media type of a signature layer (cosign's
	// types.SimpleSigningMediaType).
	SimpleSigningMediaType types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation holds the base64 signature of the layer's payload (cosign's
	// static.SignatureAnnotationKey).
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
)

// maxKeyFile bounds what LoadKey reads: a PEM private key is a few hundred bytes.
const maxKeyFile = 64 << 10

// LoadKey reads an unencrypted PEM private key (PKCS#8, EC or RSA; ECDSA P-256 is what
// cosign makes) and returns a signer for it. cosign's own encrypted key format ("ENCRYPTED
// SIGSTORE PRIVATE KEY") is refused with how to get a plain one: decrypting it needs a
// password prompt this non-interactive build does not have.
func LoadKey(path string) (signature.SignerVerifier, error) {
	f, err := lock.OpenInput(path)
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
	if bytes.Contains(raw, []byte("ENCRYPTED SIGSTORE PRIVATE KEY")) || bytes.Contains(raw, []byte("ENCRYPTED COSIGN PRIVATE KEY")) {
		return nil, fmt.Errorf("--sign-key %s is cosign's encrypted key format, which this build cannot decrypt without a password prompt: pass an unencrypted PEM key (openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem; openssl pkey -in key.pem -pubout -out key.pub gives the public key for cosign verify --key)", path)
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(raw, cryptoutils.SkipPassword)
	if err != nil {
		// The error may quote the file's bytes: name the file, never its contents.
		return nil, fmt.Errorf("--sign-key %s is not an unencrypted PEM private key (PKCS#8, EC or RSA); make one with openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out key.pem", path)
	}
	sv, err := signature.LoadSignerVerifier(priv, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", path, err)
	}
	return sv, nil
}

// SignatureTag is where cosign looks for the signatures of ref: REPO:sha256-<hex>.sig.
func SignatureTag(ref name.Digest) (name.Tag, error) {
	h, err := v1.NewHash(ref.DigestStr())
	if err != nil {
		return name.Tag{}, fmt.Errorf("signature tag of %s: %w", ref, err)
	}
	return ref.Repository.Tag(h.Algorithm + "-" + h.Hex + ".sig"), nil
}

// Sign signs ref (an image or index already in its registry) with s and pushes the
// signature to ref's repository under SignatureTag(ref). A signature manifest already there
// (an earlier signing of the same digest, by this key or another) keeps its layers: the new
// signature is added beside them, as cosign does, unless a signature of the same payload by
// the same key is already there (ECDSA signatures differ at each signing, so a rerun of the
// same build would otherwise pile up layers). It returns the signature manifest's digest
// reference.
func Sign(ctx context.Context, ref name.Digest, s signature.SignerVerifier, opts ...remote.Option) (name.Digest, error) {
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
	tag, err := SignatureTag(ref)
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
		Layer:       static.NewLayer(body, SimpleSigningMediaType),
		Annotations: map[string]string{SignatureAnnotation: b64},
	})
	if err != nil {
		return name.Digest{}, fmt.Errorf("signature manifest for %s: %w", ref, err)
	}
	if err := remote.Write(tag, signed, opts...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing the signature of %s to %s: %w", ref, tag, err)
	}
	d, err := signed.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	return tag.Repository.Digest(d.String()), nil
}

// signedBy says whether layer l of the signature manifest sig is body signed by v's key.
func signedBy(sig v1.Image, l v1.Descriptor, body []byte, v signature.Verifier) bool {
	if l.MediaType != SimpleSigningMediaType || l.Size != int64(len(body)) {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
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
