package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// SignerError reports a signature made by a key that is not pinned in the lock.
type SignerError struct {
	File   string   // the signature file
	KeyID  string   // 16 hex digits: the issuer key ID found in the signature
	Issuer string   // the issuer fingerprint, when the signature carries one
	Pinned []string // the lock's fingerprints
	// Unchecked lists pinned keys that could not be fetched, so their subkeys could not be
	// compared with KeyID.
	Unchecked error
}

func (e *SignerError) Error() string {
	who := "key ID " + e.KeyID
	if e.Issuer != "" {
		who = "key " + e.Issuer
	}
	msg := fmt.Sprintf("signature %s was made by %s, which is not one of the signers pinned in the lock (%s); "+
		"if upstream has a new release manager, check the key out of band and add its fingerprint to the lock",
		e.File, who, strings.Join(e.Pinned, ", "))
	if e.Unchecked != nil {
		msg += fmt.Sprintf(" (some pinned keys could not be fetched to look for the signing subkey: %v)", e.Unchecked)
	}
	return msg
}

type sigResult struct {
	fingerprint string
	created     time.Time
	vendored    bool // the signer's key is vendored (pipeline/lock/keys)
}

// verifySignature checks the detached signature sig (armored or binary) of the file at path
// against the pinned fingerprints, fetching the needed keys.
func (f *Fetcher) verifySignature(ctx context.Context, path string, sig []byte, sigName, sigURL string, pinned []string) (sigResult, error) {
	body, err := signatureBody(sig)
	if err != nil {
		return sigResult{}, fmt.Errorf("reading signature %s from %s: %w", sigName, sigURL, err)
	}
	sigs, err := readSignatures(body)
	if err != nil {
		return sigResult{}, fmt.Errorf("reading signature %s from %s: %w", sigName, sigURL, err)
	}
	keys, err := f.signatureKeys(ctx, sigs, sigName, pinned)
	if err != nil {
		return sigResult{}, err
	}
	chosen, err := keys.choose(sigs, sigName, pinned)
	if err != nil {
		return sigResult{}, err
	}

	// go-crypto judges revocation and expiry at config.Now(), so verify at the moment the
	// signature was made, not today. Upstream signing keys expire and get retired, yet a
	// release signed while its key was valid stays validly signed: OpenSSL 3.5.7 was signed
	// on 2026-06-09 by BA5473A2..., whose key expired on 2026-09-08, and a key revoked as
	// "superseded" or "retired" after it signed still vouches for what it signed before. This
	// is not a bypass: the signature time is inside the signed data (it cannot be moved
	// without the private key), a hard revocation (compromised, no reason, reason 0 or an
	// unknown reason) counts whenever it was issued (hardRevocation), a key that had expired when it signed is refused
	// (expiredAt), and so are signatures dated before their key existed or in the future.
	at := chosen.CreationTime
	if err := checkSignedAt(keys.ring, chosen, sigName, f.now()); err != nil {
		return sigResult{}, err
	}
	fh, err := os.Open(path)
	if err != nil {
		return sigResult{}, err
	}
	defer fh.Close()
	s, signer, err := verifyAt(keys.ring, fh, body, at)
	if err := signatureError(err, keys, signer, path, sigName, sigURL, at); err != nil {
		return sigResult{}, err
	}
	if ps, _ := signer.PrimarySelfSignature(); ps != nil && signer.PrimaryKey.KeyExpired(ps, f.now()) {
		f.sink.Send(progress.Detailf("note: key %X has expired since it signed %s on %s; the signature stays valid",
			signer.PrimaryKey.Fingerprint, sigName, at.UTC().Format("2006-01-02")))
	}
	return sigResult{fingerprint: fmt.Sprintf("%X", signer.PrimaryKey.Fingerprint), created: s.CreationTime, vendored: keys.vendored[signer]}, nil
}

// sigKeys are the pinned keys fetched to check a signature.
type sigKeys struct {
	ring     openpgp.EntityList
	vendored map[*openpgp.Entity]bool
	direct   []string // the pinned fingerprints the signature names as its issuer
	errs     []error  // the pinned keys that could not be had
}

// signatureKeys fetches the keys the signature names first (by issuer fingerprint or by the
// key ID at the end of a fingerprint). Only when none matches, which is also what a
// signature by a subkey looks like, it fetches every pinned key, to look among their subkeys.
func (f *Fetcher) signatureKeys(ctx context.Context, sigs []*packet.Signature, sigName string, pinned []string) (*sigKeys, error) {
	k := &sigKeys{vendored: map[*openpgp.Entity]bool{}}
	for _, fp := range pinned {
		for _, s := range sigs {
			if issuerMatches(s, fp) {
				k.direct = append(k.direct, fp)
				break
			}
		}
	}
	candidates := k.direct
	if len(candidates) == 0 {
		candidates = pinned
	}
	for _, fp := range candidates {
		e, v, err := f.key(ctx, fp)
		if err != nil {
			k.errs = append(k.errs, err)
			continue
		}
		k.ring = append(k.ring, e)
		k.vendored[e] = v
	}
	if len(k.direct) > 0 && len(k.ring) == 0 {
		return nil, fmt.Errorf("verifying signature %s: %w", sigName, errors.Join(k.errs...))
	}
	return k, nil
}

// choose returns the first signature packet whose issuer is in the keyring, the one
// go-crypto checks (see verifyDetachedSignature), to learn when it was made; or the error
// naming the signer that is not pinned.
func (k *sigKeys) choose(sigs []*packet.Signature, sigName string, pinned []string) (*packet.Signature, error) {
	for _, s := range sigs {
		if len(k.ring.KeysByIdUsage(*s.IssuerKeyId, packet.KeyFlagSign)) > 0 {
			return s, nil
		}
	}
	s := sigs[0]
	se := &SignerError{File: sigName, KeyID: fmt.Sprintf("%016X", *s.IssuerKeyId), Pinned: pinned, Unchecked: errors.Join(k.errs...)}
	if len(s.IssuerFingerprint) > 0 {
		se.Issuer = fmt.Sprintf("%X", s.IssuerFingerprint)
	}
	if len(k.direct) > 0 {
		// The issuer is pinned but its key carries no signing-capable key with that ID.
		return nil, fmt.Errorf("signature %s names pinned key %s, but that key has no signing key with ID %s",
			sigName, strings.Join(k.direct, ", "), se.KeyID)
	}
	return nil, se
}

// checkSignedAt refuses a signature dated in the future (past now) or before its key was
// created.
func checkSignedAt(keyring openpgp.EntityList, chosen *packet.Signature, sigName string, now time.Time) error {
	at := chosen.CreationTime
	if at.After(now.Add(24 * time.Hour)) {
		return fmt.Errorf("signature %s claims to be made on %s, in the future (is this machine's clock right?)",
			sigName, at.UTC().Format(time.RFC3339))
	}
	for _, k := range keyring.KeysById(*chosen.IssuerKeyId) {
		if at.Before(k.PublicKey.CreationTime) {
			return fmt.Errorf("signature %s claims to be made on %s, before its key %X was created on %s",
				sigName, at.UTC().Format(time.RFC3339), k.PublicKey.Fingerprint, k.PublicKey.CreationTime.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// verifyAt checks the signature body of signed against keyring as of at, judging expiry by
// the key's current bindings and revocation by hardRevocation.
func verifyAt(keyring openpgp.EntityList, signed io.Reader, body []byte, at time.Time) (*packet.Signature, *openpgp.Entity, error) {
	cfg := &packet.Config{Time: func() time.Time { return at }}
	s, signer, err := openpgp.VerifyDetachedSignature(keyring, signed, bytes.NewReader(body), cfg)
	if (errors.Is(err, pgperrors.ErrSignatureExpired) || errors.Is(err, pgperrors.ErrKeyExpired)) && s != nil && signer != nil {
		// The cryptographic check passed and so did the revocation and critical-notation
		// checks (go-crypto runs them before the expiry checks). But go-crypto calls a binding
		// self-signature made after `at` "expired", and keeps only the newest binding. Keys
		// get re-signed to extend their life (this OpenSSL key was on 2026-06-10, a day after
		// it signed 3.5.7), so judge expiry the way gpg does: by the key's current bindings,
		// at the time of the signature.
		err = expiredAt(keyring, s, signer, at)
	}
	if err == nil && s != nil && signer != nil {
		err = hardRevocation(keyring, s, signer)
	}
	return s, signer, err
}

// signatureError is the error to report for verifyAt's err (nil when it passed with a
// signer), naming the file, the signature and the key.
func signatureError(err error, keys *sigKeys, signer *openpgp.Entity, path, sigName, sigURL string, at time.Time) error {
	fprs := strings.Join(fingerprints(keys.ring), ", ")
	if signer != nil {
		fprs = fmt.Sprintf("%X", signer.PrimaryKey.Fingerprint)
	}
	switch {
	case errors.Is(err, pgperrors.ErrKeyExpired), errors.Is(err, pgperrors.ErrSignatureExpired):
		return &ExpiredSignerError{File: sigName, URL: sigURL, Fingerprint: fprs, SignedAt: at,
			Vendored: signer != nil && keys.vendored[signer], Err: err}
	case errors.Is(err, pgperrors.ErrKeyRevoked):
		return fmt.Errorf("signature %s from %s was made by pinned key %s, which is revoked: %w "+
			"(do not use this file; find out from upstream why the key was revoked)", sigName, sigURL, fprs, err)
	case err != nil:
		return fmt.Errorf("signature %s from %s does not verify %s with the pinned key %s: %w "+
			"(the file or the signature was altered, or the signature belongs to another file)",
			sigName, sigURL, filepath.Base(path), fprs, err)
	case signer == nil:
		return fmt.Errorf("signature %s: no signer", sigName)
	}
	return nil
}

// expiredAt reports whether the key that made s (primary key or signing subkey of signer) or
// s itself had expired at time at, going by the key's newest binding signatures.
func expiredAt(keyring openpgp.EntityList, s *packet.Signature, signer *openpgp.Entity, at time.Time) error {
	if lifetimeOver(s, at) {
		return pgperrors.ErrSignatureExpired
	}
	primarySig, _ := signer.PrimarySelfSignature()
	if primarySig == nil {
		return errors.New("the signing key has no self-signature")
	}
	if signer.PrimaryKey.KeyExpired(primarySig, at) || lifetimeOver(primarySig, at) {
		return pgperrors.ErrKeyExpired
	}
	for _, k := range keyring.KeysByIdUsage(*s.IssuerKeyId, packet.KeyFlagSign) {
		if k.Entity != signer || k.PublicKey == signer.PrimaryKey {
			continue
		}
		if k.PublicKey.KeyExpired(k.SelfSignature, at) || lifetimeOver(k.SelfSignature, at) {
			return pgperrors.ErrKeyExpired
		}
	}
	return nil
}

// lifetimeOver is Signature.SigExpired without the "created after at" part.
func lifetimeOver(s *packet.Signature, at time.Time) bool {
	if s.SigLifetimeSecs == nil || *s.SigLifetimeSecs == 0 {
		return false
	}
	return at.Unix() > s.CreationTime.Unix()+int64(*s.SigLifetimeSecs)
}

// issuerMatches reports whether the signature names the primary key fpr as its issuer.
func issuerMatches(s *packet.Signature, fpr string) bool {
	if len(s.IssuerFingerprint) > 0 {
		return strings.EqualFold(fmt.Sprintf("%X", s.IssuerFingerprint), fpr)
	}
	return strings.EqualFold(fmt.Sprintf("%016X", *s.IssuerKeyId), fpr[len(fpr)-16:])
}

func fingerprints(el openpgp.EntityList) []string {
	var out []string
	for _, e := range el {
		out = append(out, fmt.Sprintf("%X", e.PrimaryKey.Fingerprint))
	}
	return out
}

// signatureBody returns the binary packets of an armored (.asc) or binary (.sig) signature.
func signatureBody(sig []byte) ([]byte, error) { return dearmor(sig, openpgp.SignatureType) }

// dearmor returns the binary packets of b: b itself when it is binary, else the body of its
// armored block, which must be of blockType (a key, a signature).
func dearmor(b []byte, blockType string) ([]byte, error) {
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if !bytes.HasPrefix(trimmed, []byte("-----BEGIN PGP")) {
		return b, nil
	}
	block, err := armor.Decode(bytes.NewReader(trimmed))
	if err != nil {
		return nil, fmt.Errorf("decoding armor: %w", err)
	}
	if block.Type != blockType {
		return nil, fmt.Errorf("armored block is a %q, not a %q", block.Type, blockType)
	}
	return io.ReadAll(block.Body)
}

// readSignatures parses every signature packet; anything else is an error.
func readSignatures(body []byte) ([]*packet.Signature, error) {
	var sigs []*packet.Signature
	r := packet.NewReader(bytes.NewReader(body))
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		s, ok := p.(*packet.Signature)
		if !ok {
			return nil, fmt.Errorf("found a %T packet, want only signature packets", p)
		}
		if s.IssuerKeyId == nil {
			return nil, errors.New("a signature names no issuer key")
		}
		sigs = append(sigs, s)
	}
	if len(sigs) == 0 {
		return nil, errors.New("no signature packet")
	}
	return sigs, nil
}

// cachedSignature verifies the signature cached at sigPath. It returns nil and no error when
// there is none, or when the cached one no longer verifies: the lock's pins changed, or
// upstream's signature did (a re-signed release). That is not evidence of tampering with the
// tarball, whose SHA-256 the lock pins, so the cached file is dropped and the caller fetches
// the signature afresh, which must then verify.
func (f *Fetcher) cachedSignature(ctx context.Context, c lock.Component, tarball, sigPath, sigName string) (*sigResult, error) {
	sig, err := os.ReadFile(sigPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading cached signature: %w", err)
	}
	res, err := f.verifySignature(ctx, tarball, sig, sigName, "cache "+sigPath, c.Signature.Fingerprints)
	if err != nil {
		f.sink.Send(progress.Detailf("%s: cached signature %s does not verify (%v): fetching it again", c.Name, sigPath, err))
		if err := os.Remove(sigPath); err != nil {
			return nil, fmt.Errorf("removing cached signature that does not verify: %w", err)
		}
		return nil, nil
	}
	return &res, nil
}

// fetchSignature fetches the component's signature, verifies it, and caches it at sigPath.
func (f *Fetcher) fetchSignature(ctx context.Context, c lock.Component, tarball, sigPath, sigName string) (*sigResult, error) {
	sig, res, err := f.fetchVerified(ctx, c, tarball, sigName)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Dir(sigPath), sigPath, sig); err != nil {
		return nil, fmt.Errorf("caching signature: %w", err)
	}
	return &res, nil
}

// fetchVerified fetches the signature the lock pins for c, named sigName, and verifies the
// tarball with it: the signature and who made it.
func (f *Fetcher) fetchVerified(ctx context.Context, c lock.Component, tarball, sigName string) ([]byte, sigResult, error) {
	sigURL := f.fileURL(c.Signature.URL)
	sig, err := f.get(ctx, sigURL, maxSmallFile)
	if err != nil {
		return nil, sigResult{}, fmt.Errorf("fetching signature %s: %w", sigName, err)
	}
	res, err := f.verifySignature(ctx, tarball, sig, sigName, sigURL, c.Signature.Fingerprints)
	if err != nil {
		return nil, sigResult{}, err
	}
	return sig, res, nil
}
