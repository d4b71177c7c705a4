package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
)

// KeyError reports a pinned fingerprint whose key is neither vendored nor obtainable.
type KeyError struct {
	Fingerprint string
	Tried       []string // where the key was looked for, in order
	Err         error    // what each place said
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("no usable key for pinned fingerprint %s: it is not vendored (%s/%s.asc) and fetching it failed (tried %s): %v; "+
		"check the key out of band, then add it as %s/%s.asc in a reviewed change (or pass --keyserver URL with a key server that has it)",
		e.Fingerprint, lock.KeysDir, e.Fingerprint, strings.Join(e.Tried, ", "), e.Err, lock.KeysDir, e.Fingerprint)
}

func (e *KeyError) Unwrap() error { return e.Err }

// key returns the public key whose primary fingerprint is fpr, and whether it is vendored.
// A vendored key (pipeline/lock/keys) wins over everything and is never fetched. Otherwise
// the key comes from the cache (<cache>/keys/<FPR>.asc) or is fetched from the mirror or the
// key servers in turn. Key material is accepted only if it holds a key with exactly that
// primary fingerprint; anything else in it (other keys bundled with it) is ignored.
func (f *Fetcher) key(ctx context.Context, fpr string) (*openpgp.Entity, bool, error) {
	if b, where, ok, err := f.vendoredKey(fpr); err != nil {
		return nil, false, err
	} else if ok {
		e, _, err := pickKey(b, fpr)
		if err != nil {
			// keys_test.go in pipeline/lock keeps this from happening for the embedded keys.
			return nil, false, fmt.Errorf("vendored key %s: %w (fix or remove the file)", where, err)
		}
		f.sink.Send(progress.Detailf("key %s: vendored (%s)", fpr, where))
		return e, true, nil
	}
	file := filepath.Join(f.cacheDir, "keys", fpr+".asc")
	if b, err := os.ReadFile(file); err == nil {
		e, _, err := pickKey(b, fpr)
		if err == nil {
			f.sink.Send(progress.Detailf("key %s: cached %s (fetched earlier, fingerprint checked again)", fpr, file))
			return e, false, nil
		}
		f.sink.Send(progress.Detailf("cached key %s is unusable (%v): fetching it again", file, err))
		os.Remove(file)
	}
	e, b, src, noIDs, err := f.fetchKey(ctx, fpr)
	if err != nil {
		return nil, false, err
	}
	if err := writeFileAtomic(filepath.Dir(file), file, b); err != nil {
		return nil, false, fmt.Errorf("caching key %s: %w", fpr, err)
	}
	how := "fingerprint verified"
	if noIDs {
		how += "; it has no user IDs and was accepted through its direct-key self-signature"
	}
	f.sink.Send(progress.Detailf("key %s: fetched from %s (%s), cached in %s", fpr, safeio.RedactURL(src), how, file))
	return e, false, nil
}

// vendoredKey returns the reviewed key for fpr: a copy RefreshKey fetched in this run, else
// <keys dir>/<FPR>.asc (WithKeysDir), else the one embedded in the program (pipeline/lock/keys
// when it was built). The keys directory beside the lock comes before the embedded copy
// because it is the reviewed state of the checkout being built: a key the update just
// vendored or refreshed there counts before the program is rebuilt. Whichever copy is used
// must still hold the key with exactly that fingerprint (pickKey), so a copy can differ only
// in what the key's owner signed (identities, expiry, subkeys, revocations).
func (f *Fetcher) vendoredKey(fpr string) (b []byte, where string, ok bool, err error) {
	f.refreshMu.Lock()
	b, ok = f.refreshed[fpr]
	f.refreshMu.Unlock()
	if ok {
		return b, "refreshed in this run", true, nil
	}
	if f.keysDir != "" && lock.IsFingerprint(fpr) {
		file := filepath.Join(f.keysDir, fpr+".asc")
		b, err = safeio.ReadInput(file, maxSmallFile)
		if err == nil {
			return b, file, true, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, "", false, fmt.Errorf("reading vendored key %s: %w", file, err)
		}
	}
	if b, ok := lock.VendoredKey(fpr); ok {
		return b, lock.KeysDir + "/" + fpr + ".asc", true, nil
	}
	return nil, "", false, nil
}

// fetchKey downloads the key fpr from the mirror or the key servers in turn and returns the
// first that holds a key with exactly that primary fingerprint (see pickKey), with the
// material as received and where it came from.
func (f *Fetcher) fetchKey(ctx context.Context, fpr string) (e *openpgp.Entity, b []byte, src string, noIDs bool, err error) {
	srcs := f.keyURLs(fpr)
	var errs []error
	for _, src := range srcs {
		b, err := f.get(ctx, src, maxSmallFile)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		e, noIDs, err := pickKey(b, fpr)
		if err != nil {
			errs = append(errs, fmt.Errorf("key from %s: %w", safeio.RedactURL(src), err))
			continue
		}
		return e, b, src, noIDs, nil
	}
	shown := make([]string, len(srcs))
	for i, s := range srcs {
		shown[i] = safeio.RedactURL(s)
	}
	return nil, nil, "", false, &KeyError{Fingerprint: fpr, Tried: shown, Err: errors.Join(errs...)}
}

// SignerKey is a signer's public key as an update vendors it into the repository.
type SignerKey struct {
	Fingerprint string
	// Armored is that key alone (no other key a server bundled with it), armored: the
	// content of <FINGERPRINT>.asc.
	Armored []byte
	// UserIDs are the key's identities, each with a verified self-signature.
	UserIDs []string
	// Source is where it came from: a key server's or the mirror's URL (password removed).
	Source string
	// Vendored: the key was already vendored (Source is then its file) and nothing needs
	// writing.
	Vendored bool
	// Expires is when the key expires by its newest self-signature (a date, or "never"),
	// for a fetched key.
	Expires string
}

// SignerKey returns the public key whose primary fingerprint is fpr, for vendoring: the
// vendored one when there is one, else a fresh download from the mirror or the key servers
// (not the cache, so that Source says where it came from). go-crypto reads a key only when
// every user ID self-signature and subkey binding verifies, and pickKey takes only the key
// with exactly fpr; on top of that a key without user IDs is refused here, because a
// reviewer is asked to judge it by its identities.
func (f *Fetcher) SignerKey(ctx context.Context, fpr string) (SignerKey, error) {
	if err := f.checkKeyRequest(fpr); err != nil {
		return SignerKey{}, err
	}
	if b, where, ok, err := f.vendoredKey(fpr); err != nil {
		return SignerKey{}, err
	} else if ok {
		e, _, err := pickKey(b, fpr)
		if err != nil {
			return SignerKey{}, fmt.Errorf("vendored key %s: %w (fix or remove the file)", where, err)
		}
		return SignerKey{Fingerprint: fpr, Armored: b, UserIDs: userIDs(e), Source: where, Vendored: true}, nil
	}
	return f.fetchSignerKey(ctx, fpr)
}

// checkKeyRequest refuses a key request before anything is fetched.
func (f *Fetcher) checkKeyRequest(fpr string) error {
	if f.initErr != nil {
		return f.initErr
	}
	if !lock.IsFingerprint(fpr) {
		return fmt.Errorf("%q is not a key fingerprint (40 upper-case hex digits)", fpr)
	}
	return nil
}

// fetchSignerKey downloads the key fpr (mirror or key servers, never the cache) and exports
// it as an update vendors it.
func (f *Fetcher) fetchSignerKey(ctx context.Context, fpr string) (SignerKey, error) {
	e, _, src, noIDs, err := f.fetchKey(ctx, fpr)
	if err != nil {
		return SignerKey{}, err
	}
	return exportFetched(e, fpr, src, noIDs)
}

// exportFetched is a fetched key as an update vendors it: that key alone, armored, and read
// back to be sure. A key without user IDs is refused, because a reviewer is asked to judge it
// by its identities.
func exportFetched(e *openpgp.Entity, fpr, src string, noIDs bool) (SignerKey, error) {
	if noIDs || len(e.Identities) == 0 {
		return SignerKey{}, fmt.Errorf("key %s from %s has no user IDs, so a reviewer cannot tell whose it is: fetch it from a key server that keeps them (--keyserver https://keyserver.ubuntu.com), or vendor it by hand as %s/%s.asc", fpr, safeio.RedactURL(src), lock.KeysDir, fpr)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return SignerKey{}, err
	}
	if err := e.Serialize(w); err != nil {
		return SignerKey{}, fmt.Errorf("exporting key %s: %w", fpr, err)
	}
	if err := w.Close(); err != nil {
		return SignerKey{}, err
	}
	buf.WriteByte('\n')
	// The exported file must read back as exactly this key (what lock's key file test and
	// the next build will require of it).
	if back, _, err := pickKey(buf.Bytes(), fpr); err != nil || len(back.Identities) != len(e.Identities) {
		return SignerKey{}, fmt.Errorf("exporting key %s: the exported key does not read back (%v)", fpr, err)
	}
	expires := "never"
	if ps, _ := e.PrimarySelfSignature(); ps != nil && ps.KeyLifetimeSecs != nil && *ps.KeyLifetimeSecs != 0 {
		expires = e.PrimaryKey.CreationTime.Add(time.Duration(*ps.KeyLifetimeSecs) * time.Second).UTC().Format("2006-01-02")
	}
	return SignerKey{Fingerprint: fpr, Armored: buf.Bytes(), UserIDs: userIDs(e), Source: safeio.RedactURL(src), Expires: expires}, nil
}

func userIDs(e *openpgp.Entity) []string {
	var out []string
	for id := range e.Identities {
		if id != "" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// pickKey parses armored or binary key material and returns the entity whose primary key
// has the fingerprint fpr. noIDs reports a key without user IDs, accepted through its
// direct-key self-signature (see identitylessEntity).
func pickKey(b []byte, fpr string) (e *openpgp.Entity, noIDs bool, err error) {
	body, err := dearmor(b, openpgp.PublicKeyType)
	if err != nil {
		return nil, false, fmt.Errorf("parsing OpenPGP key: %w", err)
	}
	el, readErr := openpgp.ReadKeyRing(bytes.NewReader(body))
	var found []string
	for _, e := range el {
		got := fmt.Sprintf("%X", e.PrimaryKey.Fingerprint)
		if got == fpr {
			return e, false, nil
		}
		found = append(found, got)
	}
	// go-crypto skips (or, alone in the file, refuses) a v4 key without user IDs: that is
	// what keys.openpgp.org serves when the owner has not confirmed an address.
	e, ok, err := identitylessEntity(body, fpr)
	if err != nil {
		return nil, false, err
	}
	if ok {
		return e, true, nil
	}
	if readErr != nil {
		return nil, false, fmt.Errorf("parsing OpenPGP key: %w", readErr)
	}
	return nil, false, fmt.Errorf("refusing key material: asked for fingerprint %s, got %s", fpr, strings.Join(found, ", "))
}

// identitylessEntity builds the entity for the primary key fpr from body when that key has no
// user ID packets at all (ok is false otherwise, leaving the verdict to go-crypto). Every
// self-signature is verified here with go-crypto's packet API: the newest valid direct-key
// self-signature stands in for the user ID self-signature go-crypto would read the key's
// flags and expiry from, subkeys count only with a valid binding signature (which, for a
// signing subkey, includes the subkey's back-signature), and only revocations the key itself
// made are kept. Signatures that do not verify are ignored, as if the server had not sent
// them. A key with no valid direct-key self-signature is refused: nothing would then say
// whether or when it expires.
func identitylessEntity(body []byte, fpr string) (*openpgp.Entity, bool, error) {
	primary, pkts, err := keyPackets(body, fpr)
	if err != nil || primary == nil {
		return nil, false, err
	}
	for _, p := range pkts {
		if _, ok := p.(*packet.UserId); ok {
			return nil, false, nil
		}
	}
	if primary.Version >= 6 {
		// go-crypto reads v6 keys without user IDs itself; a refusal stands.
		return nil, false, nil
	}
	e := selfSignedEntity(primary, pkts)
	if e.SelfSignature == nil {
		return nil, false, fmt.Errorf("key %s has no user IDs (key servers such as keys.openpgp.org strip the ones their owner has not confirmed) "+
			"and no valid direct-key self-signature, so nothing says how it may be used or when it expires: "+
			"fetch it from a key server that keeps user IDs (--keyserver https://keyserver.ubuntu.com), or vendor it in %s", fpr, lock.KeysDir)
	}
	// go-crypto takes a v4 key's flags and expiry from its primary identity's self-signature.
	// This identity has no user ID: it only carries the verified direct-key self-signature
	// there, so go-crypto's own checks (signing flag, expiry, revocation) read it.
	e.Identities[""] = &openpgp.Identity{SelfSignature: e.SelfSignature, Signatures: []*packet.Signature{e.SelfSignature}}
	return e, true, nil
}

// keyPackets finds the primary key fpr in body and returns it with the packets that follow
// it up to the next primary key (nil, nil when body does not hold fpr). Packets go-crypto
// does not support are passed over.
func keyPackets(body []byte, fpr string) (*packet.PublicKey, []packet.Packet, error) {
	var (
		primary  *packet.PublicKey
		pkts     []packet.Packet
		inTarget bool
	)
	r := packet.NewReader(bytes.NewReader(body))
	for {
		p, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		var unsupported pgperrors.UnsupportedError
		if errors.As(err, &unsupported) {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("parsing OpenPGP key: %w", err)
		}
		if pk, ok := p.(*packet.PublicKey); ok && !pk.IsSubkey {
			if inTarget {
				break
			}
			if inTarget = fmt.Sprintf("%X", pk.Fingerprint) == fpr; inTarget {
				primary = pk
			}
			continue
		}
		if inTarget {
			pkts = append(pkts, p)
		}
	}
	return primary, pkts, nil
}

// selfSignedEntity builds the entity of primary from its packets, keeping only the
// signatures the key itself made that verify (see identitylessEntity): the newest
// direct-key self-signature as its SelfSignature (nil when there is none), subkeys with a
// valid binding, and its own revocations.
func selfSignedEntity(primary *packet.PublicKey, pkts []packet.Packet) *openpgp.Entity {
	e := &openpgp.Entity{PrimaryKey: primary, Identities: map[string]*openpgp.Identity{}}
	var sub *openpgp.Subkey
	addSub := func() {
		if sub != nil && sub.Sig != nil {
			e.Subkeys = append(e.Subkeys, *sub)
		}
		sub = nil
	}
	for _, p := range pkts {
		switch p := p.(type) {
		case *packet.PublicKey:
			addSub()
			sub = &openpgp.Subkey{PublicKey: p}
		case *packet.Signature:
			switch {
			case sub != nil && (p.SigType == packet.SigTypeSubkeyBinding || p.SigType == packet.SigTypeSubkeyRevocation):
				if primary.VerifyKeySignature(sub.PublicKey, p) != nil {
					continue
				}
				if p.SigType == packet.SigTypeSubkeyRevocation {
					sub.Revocations = append(sub.Revocations, p)
				} else if sub.Sig == nil || p.CreationTime.After(sub.Sig.CreationTime) {
					sub.Sig = p
				}
			case sub == nil && p.SigType == packet.SigTypeDirectSignature:
				if !p.CheckKeyIdOrFingerprint(primary) || primary.VerifyDirectKeySignature(p) != nil {
					continue
				}
				e.Signatures = append(e.Signatures, p)
				if e.SelfSignature == nil || p.CreationTime.After(e.SelfSignature.CreationTime) {
					e.SelfSignature = p
				}
			case sub == nil && p.SigType == packet.SigTypeKeyRevocation:
				if primary.VerifyRevocationSignature(p) == nil {
					e.Revocations = append(e.Revocations, p)
				}
			}
		}
	}
	addSub()
	return e
}

// hardRevocation returns an error wrapping ErrKeyRevoked when the key that made s (the
// signer's primary key, and the signing subkey when a subkey made it) carries a hard
// revocation. RFC 9580 section 5.2.3.31: only "key superseded" (1), "key retired" (3) and
// "user ID no longer valid" (32) are soft, leaving valid what the key signed before the
// revocation (go-crypto judges those at the signature's time, see verifySignature). Any
// other revocation, including one with no reason, reason 0 ("no reason specified") or an
// unknown code, withdraws every signature the key ever made. go-crypto treats only "key
// compromised" that way, so this check is ours.
func hardRevocation(keyring openpgp.EntityList, s *packet.Signature, signer *openpgp.Entity) error {
	revs := append([]*packet.Signature{}, signer.Revocations...)
	for _, k := range keyring.KeysById(*s.IssuerKeyId) {
		if k.Entity == signer && k.PublicKey != signer.PrimaryKey {
			revs = append(revs, k.Revocations...)
		}
	}
	for _, r := range revs {
		if softRevocation(r) {
			continue
		}
		reason := "no reason given"
		if r.RevocationReason != nil {
			reason = fmt.Sprintf("reason %d", *r.RevocationReason)
			if *r.RevocationReason == packet.KeyCompromised {
				reason += " (key compromised)"
			}
		}
		if r.RevocationReasonText != "" {
			reason += fmt.Sprintf(": %q", r.RevocationReasonText)
		}
		return fmt.Errorf("%w: revoked on %s with %s, a hard revocation (only superseded, retired or user ID no longer valid leave earlier signatures valid)",
			pgperrors.ErrKeyRevoked, r.CreationTime.UTC().Format(time.RFC3339), reason)
	}
	return nil
}

func softRevocation(r *packet.Signature) bool {
	if r.RevocationReason == nil {
		return false
	}
	switch *r.RevocationReason {
	case packet.KeySuperseded, packet.KeyRetired, packet.UserIDNotValid:
		return true
	}
	return false
}
