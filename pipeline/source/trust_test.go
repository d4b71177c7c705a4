//go:build integration

package source_test

// Where signer keys come from (vendored, cache, key servers, keys without user IDs) and which
// revocations withdraw a signature.

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// logs collects a fetcher's log lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

// Send keeps each note's text (the fetcher sends nothing else).
func (l *logs) Send(e progress.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n, ok := e.(progress.Note); ok {
		l.lines = append(l.lines, n.Text)
		return
	}
	l.lines = append(l.lines, fmt.Sprintf("%+v", e))
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// A vendored key wins over the mirror and every key server: OpenSSL's real signature verifies
// with BA5473A2... while the mirror's copy and a key server that would answer with another
// key are never asked.
func TestVendoredKeyWins(t *testing.T) {
	l := testLock(t)
	impostor := testKey(t, "impostor", time.Now().Add(-time.Hour))
	dir := mirrorWith(t, map[string][]byte{opensslKey + ".asc": armoredPublic(t, impostor)})
	mirror, mc := serve(t, http.FileServer(http.Dir(dir)))
	ks, kc := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(armoredPublic(t, impostor)) }))
	for _, opts := range [][]source.Option{nil, {source.WithKeyserver(ks)}} {
		var log logs
		cache := t.TempDir()
		f := fastFetcher(t, cache, mirror, append(opts, source.WithSink(&log))...)
		v, err := f.Fetch(context.Background(), l.MustComponent(lock.OpenSSL))
		if err != nil {
			t.Fatal(err)
		}
		if !v.Signed || !v.SignerVendored || v.SignedBy != opensslKey {
			t.Errorf("Verified = %+v, want signed by the vendored %s", v, opensslKey)
		}
		if !strings.Contains(log.String(), "key "+opensslKey+": vendored ("+lock.KeysDir+"/"+opensslKey+".asc)") {
			t.Errorf("the log does not say the key is vendored:\n%s", log.String())
		}
		if _, err := os.Stat(filepath.Join(cache, "keys", opensslKey+".asc")); err == nil {
			t.Error("the vendored key was cached")
		}
	}
	if n := mc.count("/" + opensslKey + ".asc"); n != 0 || kc.total() != 0 {
		t.Errorf("asked the mirror %d and the key server %d times for a vendored key", n, kc.total())
	}
}

// A pinned fingerprint that is not vendored and that no key server has fails, naming the
// fingerprint, where it looked, and how to add the key.
func TestKeyNeitherVendoredNorFetchable(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	key := testKey(t, "nowhere", created)
	dir := mirrorWith(t, map[string][]byte{"nginx-1.26.3.tar.gz.asc": detachSign(t, key, tarball, created.Add(time.Minute), true)})
	mirror, _ := serve(t, http.FileServer(http.Dir(dir)))
	ks1, _ := serve(t, http.NotFoundHandler())
	ks2, _ := serve(t, http.NotFoundHandler())
	_, err := fastFetcher(t, t.TempDir(), mirror, source.WithKeyserver(ks1, ks2+"/vks/v1/by-fingerprint")).
		Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(key)))
	var ke *source.KeyError
	if !errors.As(err, &ke) || ke.Fingerprint != fpr(key) {
		t.Fatalf("err = %v, want a *KeyError for %s", err, fpr(key))
	}
	for _, want := range []string{fpr(key), lock.KeysDir + "/" + fpr(key) + ".asc", "reviewed change", "--keyserver",
		ks1 + "/pks/lookup?op=get&options=mr&search=0x" + fpr(key), ks2 + "/vks/v1/by-fingerprint/" + fpr(key), "404"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	t.Logf("error: %v", err)
}

// identityless returns e's public key as keys.openpgp.org serves it when the owner has not
// confirmed an address: the primary key, its revocations and direct-key self-signatures, and
// the subkeys with their bindings; no user IDs. With direct false there is no direct-key
// self-signature either; signer, when set, makes it instead of e (a forgery).
func identityless(t *testing.T, e *openpgp.Entity, at time.Time, direct bool, signer *openpgp.Entity) []byte {
	t.Helper()
	pub := *e
	pub.Identities = nil
	pub.Signatures = nil
	if direct {
		if signer == nil {
			signer = e
		}
		ds := &packet.Signature{
			Version: e.PrimaryKey.Version, SigType: packet.SigTypeDirectSignature, PubKeyAlgo: signer.PrimaryKey.PubKeyAlgo,
			Hash: crypto.SHA256, CreationTime: at, IssuerKeyId: &signer.PrimaryKey.KeyId, IssuerFingerprint: signer.PrimaryKey.Fingerprint,
			FlagsValid: true, FlagSign: true, FlagCertify: true,
		}
		if signer != e {
			// A forged direct-key signature claims to be the key's own.
			ds.IssuerKeyId, ds.IssuerFingerprint = &e.PrimaryKey.KeyId, e.PrimaryKey.Fingerprint
		}
		if err := ds.SignDirectKeyBinding(e.PrimaryKey, signer.PrivateKey, &packet.Config{Time: func() time.Time { return at }}); err != nil {
			t.Fatal(err)
		}
		pub.Signatures = []*packet.Signature{ds}
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := pub.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

// keys.openpgp.org serves a key without user IDs, which go-crypto alone refuses; the fetcher
// accepts it through its direct-key self-signature, for a signature by the primary key and
// by a signing subkey, pins it by fingerprint, caches it and logs where it came from.
func TestKeyWithoutUserIDs(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-2 * time.Hour)
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return created }}

	primaryOnly := testKey(t, "no user IDs", created)
	withSubkey := testKey(t, "no user IDs, signing subkey", created)
	if err := withSubkey.AddSigningSubkey(cfg); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		key   *openpgp.Entity
		bySub bool
	}{
		{"primary key signs", primaryOnly, false},
		{"signing subkey signs", withSubkey, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			served := identityless(t, tc.key, created, true, nil)
			// The premise: go-crypto by itself refuses this key.
			if _, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(served)); err == nil || !strings.Contains(err.Error(), "without any identities") {
				t.Fatalf("go-crypto read the key without user IDs: %v; the test no longer exercises that path", err)
			}
			sig := detachSign(t, tc.key, tarball, created.Add(time.Hour), true)
			if bySub := signedBySubkey(t, sig, tc.key); bySub != tc.bySub {
				t.Fatalf("signature by a subkey: %v, want %v", bySub, tc.bySub)
			}
			dir := mirrorWith(t, map[string][]byte{"nginx-1.26.3.tar.gz.asc": sig})
			mirror, _ := serve(t, http.FileServer(http.Dir(dir)))
			mux := http.NewServeMux()
			mux.HandleFunc("/vks/v1/by-fingerprint/"+fpr(tc.key), func(w http.ResponseWriter, r *http.Request) { w.Write(served) })
			ks, kc := serve(t, mux)
			var log logs
			cache := t.TempDir()
			comp := signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(tc.key))
			f := fastFetcher(t, cache, mirror, source.WithKeyserver(ks+"/vks/v1/by-fingerprint"), source.WithSink(&log))
			v, err := f.Fetch(context.Background(), comp)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Signed || v.SignedBy != fpr(tc.key) || v.SignerVendored {
				t.Errorf("Verified = %+v", v)
			}
			want := fmt.Sprintf("key %s: fetched from %s/vks/v1/by-fingerprint/%s", fpr(tc.key), ks, fpr(tc.key))
			if !strings.Contains(log.String(), want) || !strings.Contains(log.String(), "no user IDs") {
				t.Errorf("the log does not say where the key came from and that it has no user IDs (%q):\n%s", want, log.String())
			}
			if b, err := os.ReadFile(filepath.Join(cache, "keys", fpr(tc.key)+".asc")); err != nil || !bytes.Equal(b, served) {
				t.Errorf("key not cached as served: %v", err)
			}
			// Again, from the cache: the key server is not asked a second time.
			if _, err := fastFetcher(t, cache, mirror, source.WithKeyserver(ks+"/vks/v1/by-fingerprint")).Fetch(context.Background(), comp); err != nil {
				t.Fatal(err)
			}
			if kc.total() != 1 {
				t.Errorf("key server asked %d times, want once", kc.total())
			}
		})
	}

	// Without a direct-key self-signature, or with one the key did not make, nothing vouches
	// for the key: refused, saying why and what to do.
	forger := testKey(t, "forger", created)
	for name, served := range map[string][]byte{
		"no direct-key signature":     identityless(t, primaryOnly, created, false, nil),
		"forged direct-key signature": identityless(t, primaryOnly, created, true, forger),
	} {
		t.Run(name, func(t *testing.T) {
			dir := mirrorWith(t, map[string][]byte{"nginx-1.26.3.tar.gz.asc": detachSign(t, primaryOnly, tarball, created.Add(time.Hour), true)})
			mirror, _ := serve(t, http.FileServer(http.Dir(dir)))
			ks, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(served) }))
			cache := t.TempDir()
			_, err := fastFetcher(t, cache, mirror, source.WithKeyserver(ks+"/k/%s")).
				Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(primaryOnly)))
			if err == nil || !strings.Contains(err.Error(), "no valid direct-key self-signature") || !strings.Contains(err.Error(), fpr(primaryOnly)) {
				t.Fatalf("err = %v, want a refusal of the key without user IDs or direct-key self-signature", err)
			}
			if _, err := os.Stat(filepath.Join(cache, "keys", fpr(primaryOnly)+".asc")); err == nil {
				t.Error("the refused key was cached")
			}
		})
	}
}

// signedBySubkey reports whether the detached signature sig was made by one of e's subkeys.
func signedBySubkey(t *testing.T, sig []byte, e *openpgp.Entity) bool {
	t.Helper()
	block, err := armor.Decode(bytes.NewReader(sig))
	if err != nil {
		t.Fatal(err)
	}
	p, err := packet.Read(block.Body)
	if err != nil {
		t.Fatal(err)
	}
	s := p.(*packet.Signature)
	for _, sk := range e.Subkeys {
		if sk.PublicKey.KeyId == *s.IssuerKeyId {
			return true
		}
	}
	return false
}

// revoke adds a revocation of e's primary key (sub nil) or of the subkey sub, made at `at`.
// A nil reason leaves the reason subpacket out.
func revoke(t *testing.T, e *openpgp.Entity, sub *openpgp.Subkey, reason *packet.ReasonForRevocation, at time.Time) {
	t.Helper()
	cfg := &packet.Config{Time: func() time.Time { return at }}
	typ := packet.SigTypeKeyRevocation
	if sub != nil {
		typ = packet.SigTypeSubkeyRevocation
	}
	r := &packet.Signature{
		Version: e.PrimaryKey.Version, SigType: typ, PubKeyAlgo: e.PrimaryKey.PubKeyAlgo, Hash: crypto.SHA256,
		CreationTime: at, IssuerKeyId: &e.PrimaryKey.KeyId, IssuerFingerprint: e.PrimaryKey.Fingerprint,
		RevocationReason: reason,
	}
	if sub == nil {
		if err := r.RevokeKey(e.PrimaryKey, e.PrivateKey, cfg); err != nil {
			t.Fatal(err)
		}
		e.Revocations = append(e.Revocations, r)
		return
	}
	if err := r.RevokeSubkey(sub.PublicKey, e.PrivateKey, cfg); err != nil {
		t.Fatal(err)
	}
	sub.Revocations = append(sub.Revocations, r)
}

// RFC 9580 section 5.2.3.31: a revocation without a reason, with reason 0 or with an unknown
// reason is hard, like "key compromised": every signature of the key is withdrawn, even one
// made long before the revocation. Only "superseded", "retired" and "user ID no longer
// valid" are soft, and leave valid only what was signed before them. The same holds for a
// revoked signing subkey.
func TestRevocationReasons(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	t0 := time.Now().Add(-48 * time.Hour)
	reason := func(r packet.ReasonForRevocation) *packet.ReasonForRevocation { return &r }
	for _, tc := range []struct {
		name   string
		reason *packet.ReasonForRevocation
		before bool // revoked before the signature was made
		subkey bool // the signing subkey is revoked, not the primary key
		ok     bool
	}{
		{"no reason subpacket", nil, false, false, false},
		{"reason 0 (no reason specified)", reason(packet.NoReason), false, false, false},
		{"unknown reason 99", reason(99), false, false, false},
		{"private reason 110", reason(110), false, false, false},
		{"key compromised", reason(packet.KeyCompromised), false, false, false},
		{"superseded, after signing", reason(packet.KeySuperseded), false, false, true},
		{"retired, after signing", reason(packet.KeyRetired), false, false, true},
		{"user ID no longer valid, after signing", reason(packet.UserIDNotValid), false, false, true},
		{"retired, before signing", reason(packet.KeyRetired), true, false, false},
		{"superseded, before signing", reason(packet.KeySuperseded), true, false, false},
		{"subkey: no reason", nil, false, true, false},
		{"subkey: reason 0", reason(packet.NoReason), false, true, false},
		{"subkey: retired, after signing", reason(packet.KeyRetired), false, true, true},
		{"subkey: retired, before signing", reason(packet.KeyRetired), true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := testKey(t, "revoked", t0)
			var sub *openpgp.Subkey
			if tc.subkey {
				if err := key.AddSigningSubkey(&packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return t0 }}); err != nil {
					t.Fatal(err)
				}
				sub = &key.Subkeys[len(key.Subkeys)-1]
			}
			signedAt, revokedAt := t0.Add(2*time.Hour), t0.Add(3*time.Hour)
			if tc.before {
				revokedAt = t0.Add(time.Hour)
			}
			sig := detachSign(t, key, tarball, signedAt, true)
			if tc.subkey && !signedBySubkey(t, sig, key) {
				t.Fatal("the signature was not made by the signing subkey")
			}
			revoke(t, key, sub, tc.reason, revokedAt)
			dir := mirrorWith(t, map[string][]byte{
				"nginx-1.26.3.tar.gz.asc": sig,
				fpr(key) + ".asc":         armoredPublic(t, key),
			})
			url, _ := serve(t, http.FileServer(http.Dir(dir)))
			_, err := fastFetcher(t, t.TempDir(), url).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(key)))
			if tc.ok && err != nil {
				t.Fatalf("a soft revocation after the signature withdrew it: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "revoked")) {
				t.Fatalf("err = %v, want a refusal naming the revocation", err)
			}
			if err != nil {
				t.Logf("error: %v", err)
			}
		})
	}
}
