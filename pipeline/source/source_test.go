//go:build integration

package source_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func readMirror(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.MirrorDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// assertNothingCached fails if the cache holds the tarball with digest sum or any leftover
// temporary file.
func assertNothingCached(t *testing.T, cache, sum string) {
	t.Helper()
	if ents, err := os.ReadDir(filepath.Join(cache, "sha256", sum)); err == nil && len(ents) > 0 {
		t.Errorf("cache holds %s/%s after a failed fetch", sum, ents[0].Name())
	}
	if ents, err := os.ReadDir(filepath.Join(cache, "tmp")); err == nil && len(ents) > 0 {
		t.Errorf("temporary file %s left in the cache", ents[0].Name())
	}
}

func TestFetchAllRealSources(t *testing.T) {
	l := testLock(t)
	cache := t.TempDir()
	mirror := testenv.Mirror(t)
	got, err := fastFetcher(t, cache, mirror).FetchAll(context.Background(), l)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(l.Components) {
		t.Fatalf("FetchAll returned %d components, want the lock's %d", len(got), len(l.Components))
	}
	for _, c := range l.Components {
		v, ok := got[c.Name]
		if !ok {
			t.Fatalf("no result for %s", c.Name)
		}
		want := filepath.Join(cache, "sha256", c.SHA256, c.FileName())
		if v.Path != want {
			t.Errorf("%s: Path = %s, want %s", c.Name, v.Path, want)
		}
		b, err := os.ReadFile(v.Path)
		if err != nil {
			t.Fatal(err)
		}
		if s := sha(b); s != c.SHA256 || v.SHA256 != c.SHA256 {
			t.Errorf("%s: cached file sha256 %s, Verified.SHA256 %s, lock %s", c.Name, s, v.SHA256, c.SHA256)
		}
		if v.URL != mirror+"/"+c.FileName() {
			t.Errorf("%s: fetched from %s, want the mirror", c.Name, v.URL)
		}
		if v.Signed != (c.Signature != nil) {
			t.Errorf("%s: Signed = %v, lock has signature: %v", c.Name, v.Signed, c.Signature != nil)
		}
	}
	o := got[lock.OpenSSL]
	if o.SignedBy != opensslKey {
		t.Errorf("openssl signed by %q, want %s", o.SignedBy, opensslKey)
	}
	// The signature was made on 2026-06-09, while the key was valid; the key has expired
	// (2026-09-08) since. That must still verify.
	if d := o.SignedAt.UTC().Format("2006-01-02"); d != "2026-06-09" {
		t.Errorf("openssl signed at %s, want 2026-06-09", d)
	}
	if !strings.Contains(o.String(), "signed by "+opensslKey+" (vendored key)") || !strings.Contains(got[lock.Nginx].String(), "NO signature") {
		t.Errorf("String() = %q / %q", o.String(), got[lock.Nginx].String())
	}
	// The lock's reason for an unsigned component reaches the log line.
	if n := got[lock.Nginx]; n.Unsigned == "" || n.Unsigned != l.MustComponent(lock.Nginx).Unsigned || !strings.Contains(n.String(), n.Unsigned) {
		t.Errorf("nginx: Unsigned = %q, String() = %q; want the lock's reason in both", n.Unsigned, n.String())
	}
	// OpenSSL's key is vendored: it is neither fetched nor cached.
	if !o.SignerVendored {
		t.Errorf("openssl: SignerVendored = false, want the vendored key")
	}
	if _, err := os.Stat(filepath.Join(cache, "keys", opensslKey+".asc")); err == nil {
		t.Errorf("the vendored key was cached as if fetched")
	}
}

// TestExpiredKeyPremise shows why the fetcher judges a signature at its creation time: at
// the current date go-crypto itself refuses the real OpenSSL signature. If this ever passes,
// the test data no longer exercises the expired-key path.
func TestExpiredKeyPremise(t *testing.T) {
	vendored, ok := lock.VendoredKey(opensslKey)
	if !ok {
		t.Fatalf("%s is not vendored", opensslKey)
	}
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(vendored))
	if err != nil {
		t.Fatal(err)
	}
	today := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	_, err = openpgp.CheckArmoredDetachedSignature(el,
		bytes.NewReader(readMirror(t, "openssl-3.5.7.tar.gz")),
		bytes.NewReader(readMirror(t, "openssl-3.5.7.tar.gz.asc")),
		&packet.Config{Time: func() time.Time { return today }})
	if err == nil {
		t.Fatal("go-crypto accepted the OpenSSL signature at 2026-12-02; expected it to call the key expired")
	}
	t.Logf("go-crypto at %s: %v", today.Format("2006-01-02"), err)
}

func TestCacheHitDoesNotDownload(t *testing.T) {
	l := testLock(t)
	cache := t.TempDir()
	url, c := serve(t, http.FileServer(http.Dir(testenv.MirrorDir(t))))
	ctx := context.Background()
	if _, err := fastFetcher(t, cache, url).FetchAll(ctx, l); err != nil {
		t.Fatal(err)
	}
	first := c.total()
	// One request per tarball and per signature; OpenSSL's key is vendored, so the mirror's
	// copy of it is never asked for.
	want := len(l.Components)
	for _, comp := range l.Components {
		if comp.Signature != nil {
			want++
		}
	}
	if first != want || c.count("/"+opensslKey+".asc") != 0 {
		t.Errorf("first run made %d requests (%d for the key), want %d and none for the key", first, c.count("/"+opensslKey+".asc"), want)
	}
	got, err := fastFetcher(t, cache, url).FetchAll(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if n := c.total() - first; n != 0 {
		t.Errorf("second run made %d requests, want 0 (everything is cached)", n)
	}
	if v := got[lock.OpenSSL]; !v.Signed || v.SignedBy != opensslKey || v.URL != "" {
		t.Errorf("cached openssl: %+v", v)
	}

	// A cache entry changed on disk is caught, dropped and fetched again.
	n := got[lock.Nginx].Path
	if err := os.Chmod(n, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(n, []byte("not a tarball"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := c.count("/nginx-1.26.3.tar.gz")
	v, err := fastFetcher(t, cache, url).Fetch(ctx, l.MustComponent(lock.Nginx))
	if err != nil {
		t.Fatal(err)
	}
	if c.count("/nginx-1.26.3.tar.gz") != before+1 {
		t.Errorf("corrupt cache entry was not fetched again")
	}
	b, _ := os.ReadFile(v.Path)
	if sha(b) != l.MustComponent(lock.Nginx).SHA256 {
		t.Errorf("cache entry still corrupt after refetch")
	}
}

func TestTamperedTarball(t *testing.T) {
	l := testLock(t)
	nginx := l.MustComponent(lock.Nginx)
	b := readMirror(t, nginx.FileName())
	b[len(b)/2] ^= 0xff
	dir := mirrorWith(t, map[string][]byte{nginx.FileName(): b})
	url, c := serve(t, http.FileServer(http.Dir(dir)))
	cache := t.TempDir()

	got, err := fastFetcher(t, cache, url).FetchAll(context.Background(), l)
	if err == nil {
		t.Fatal("FetchAll accepted a tampered tarball")
	}
	if got != nil {
		t.Errorf("FetchAll returned results with an error: %v", got)
	}
	var ce *source.ChecksumError
	if !errors.As(err, &ce) {
		t.Fatalf("error is not a *ChecksumError: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{nginx.FileName(), url + "/" + nginx.FileName(), nginx.SHA256, sha(b), "check-updates --write"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	if n := c.count("/" + nginx.FileName()); n != 1 {
		t.Errorf("tampered file fetched %d times; a checksum mismatch is not retried", n)
	}
	assertNothingCached(t, cache, nginx.SHA256)
	t.Logf("error: %v", err)
}

// testKey generates a signing key (Ed25519, fast) created at the given time.
func testKey(t *testing.T, name string, created time.Time) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "nginx-forge test key", name+"@example.invalid", &packet.Config{
		Algorithm: packet.PubKeyAlgoEdDSA,
		Time:      func() time.Time { return created },
	})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func fpr(e *openpgp.Entity) string { return fmt.Sprintf("%X", e.PrimaryKey.Fingerprint) }

func armoredPublic(t *testing.T, e *openpgp.Entity) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return buf.Bytes()
}

func detachSign(t *testing.T, e *openpgp.Entity, data []byte, at time.Time, armored bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	cfg := &packet.Config{Time: func() time.Time { return at }}
	sign := openpgp.DetachSign
	if armored {
		sign = openpgp.ArmoredDetachSign
	}
	if err := sign(&buf, e, bytes.NewReader(data), cfg); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// signedNginx returns the real nginx component with a signature pinned to the given
// fingerprints, the signature file served as sigName.
func signedNginx(l *lock.Lock, sigName string, pinned ...string) lock.Component {
	c := l.MustComponent(lock.Nginx)
	c.Signature = &lock.Signature{URL: "https://nginx.org/download/" + sigName, Fingerprints: pinned}
	return c
}

func TestSignatureByPinnedTestKey(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	key := testKey(t, "pinned", created)
	for _, tc := range []struct {
		name    string
		sigName string
		armored bool
	}{
		{"armored .asc", "nginx-1.26.3.tar.gz.asc", true},
		{"binary .sig (as PCRE2 ships)", "nginx-1.26.3.tar.gz.sig", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := mirrorWith(t, map[string][]byte{
				tc.sigName:            detachSign(t, key, tarball, created.Add(time.Minute), tc.armored),
				fpr(key) + ".asc":     armoredPublic(t, key),
				"nginx-1.26.3.tar.gz": tarball,
			})
			url, c := serve(t, http.FileServer(http.Dir(dir)))
			cache := t.TempDir()
			comp := signedNginx(l, tc.sigName, opensslKey, fpr(key))
			v, err := fastFetcher(t, cache, url).Fetch(context.Background(), comp)
			if err != nil {
				t.Fatal(err)
			}
			if !v.Signed || v.SignedBy != fpr(key) {
				t.Errorf("Verified = %+v, want signed by %s", v, fpr(key))
			}
			// Only the key the signature names is fetched, not every pinned one.
			if n := c.count("/" + opensslKey + ".asc"); n != 0 {
				t.Errorf("fetched the unrelated pinned key %d times", n)
			}
			if _, err := os.Stat(filepath.Join(cache, "sha256", comp.SHA256, tc.sigName)); err != nil {
				t.Errorf("verified signature not cached: %v", err)
			}
		})
	}
}

// A cached signature that no longer verifies (upstream re-signed the release with a new
// key, and a reviewed change pinned only that one) is fetched again in the same run; the new
// one must verify too, and a signature by an unpinned key still stops the fetch with nothing
// cached.
func TestStaleCachedSignatureIsFetchedAgain(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	oldKey, newKey, intruder := testKey(t, "old", created), testKey(t, "new", created), testKey(t, "intruder", created)
	const sigName = "nginx-1.26.3.tar.gz.asc"
	dir := mirrorWith(t, map[string][]byte{
		sigName:              detachSign(t, oldKey, tarball, created.Add(time.Minute), true),
		fpr(oldKey) + ".asc": armoredPublic(t, oldKey),
		fpr(newKey) + ".asc": armoredPublic(t, newKey),
	})
	url, c := serve(t, http.FileServer(http.Dir(dir)))
	cache := t.TempDir()
	cached := filepath.Join(cache, "sha256", l.MustComponent(lock.Nginx).SHA256, sigName)
	if _, err := fastFetcher(t, cache, url).Fetch(context.Background(), signedNginx(l, sigName, fpr(oldKey))); err != nil {
		t.Fatal(err)
	}

	resigned := detachSign(t, newKey, tarball, created.Add(2*time.Minute), true)
	if err := os.WriteFile(filepath.Join(dir, sigName), resigned, 0o644); err != nil {
		t.Fatal(err)
	}
	before := c.count("/" + sigName)
	v, err := fastFetcher(t, cache, url).Fetch(context.Background(), signedNginx(l, sigName, fpr(newKey)))
	if err != nil {
		t.Fatalf("a stale cached signature stopped the fetch: %v", err)
	}
	if v.SignedBy != fpr(newKey) || c.count("/"+sigName) != before+1 {
		t.Errorf("signed by %s after %d fetches of the signature; want %s after one", v.SignedBy, c.count("/"+sigName)-before, fpr(newKey))
	}
	if b, err := os.ReadFile(cached); err != nil || !bytes.Equal(b, resigned) {
		t.Errorf("the cache does not hold the new signature (%v)", err)
	}

	// Fail closed: the fresh signature is by a key the lock does not pin.
	if err := os.WriteFile(filepath.Join(dir, sigName), detachSign(t, intruder, tarball, created.Add(3*time.Minute), true), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = fastFetcher(t, cache, url).Fetch(context.Background(), signedNginx(l, sigName, fpr(oldKey)))
	var se *source.SignerError
	if !errors.As(err, &se) {
		t.Fatalf("a signature by an unpinned key: err = %v, want a *SignerError", err)
	}
	if _, err := os.Stat(cached); err == nil {
		t.Error("a signature that does not verify is cached")
	}
}

// The keys directory beside the lock comes before the copy embedded in the program: it is
// the checkout's reviewed state, where an update refreshes a vendored key before the program
// is rebuilt. Whatever is there must still be the pinned key: here a file named after
// OpenSSL's vendored key holds another key, and OpenSSL's real signature is refused.
func TestKeysDirComesBeforeTheEmbeddedKey(t *testing.T) {
	l := testLock(t)
	ossl := l.MustComponent(lock.OpenSSL)
	url, _ := serve(t, http.FileServer(http.Dir(testenv.MirrorDir(t))))
	keysDir := t.TempDir()
	if _, err := fastFetcher(t, t.TempDir(), url, source.WithKeysDir(keysDir)).Fetch(context.Background(), ossl); err != nil {
		t.Fatalf("with the embedded key alone: %v", err)
	}
	file := filepath.Join(keysDir, opensslKey+".asc")
	if err := os.WriteFile(file, armoredPublic(t, testKey(t, "other", time.Now().Add(-time.Hour))), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := fastFetcher(t, t.TempDir(), url, source.WithKeysDir(keysDir)).Fetch(context.Background(), ossl)
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("err = %v; want the keys directory's copy %s used, and refused", err, file)
	}
}

// A signature by a signing subkey names the subkey, not the pinned primary key: the fetcher
// has to look through the pinned keys' subkeys.
func TestSignatureBySubkeyOfPinnedKey(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	key := testKey(t, "with-subkey", created)
	if err := key.AddSigningSubkey(&packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, Time: func() time.Time { return created }}); err != nil {
		t.Fatal(err)
	}
	sig := detachSign(t, key, tarball, created.Add(time.Minute), true)
	dir := mirrorWith(t, map[string][]byte{
		"nginx-1.26.3.tar.gz.asc": sig,
		fpr(key) + ".asc":         armoredPublic(t, key),
	})
	url, _ := serve(t, http.FileServer(http.Dir(dir)))
	v, err := fastFetcher(t, t.TempDir(), url).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", opensslKey, fpr(key)))
	if err != nil {
		t.Fatal(err)
	}
	if v.SignedBy != fpr(key) {
		t.Errorf("SignedBy = %s, want the primary fingerprint %s", v.SignedBy, fpr(key))
	}
}

func TestSignatureByUnpinnedKey(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	intruder := testKey(t, "intruder", created)
	dir := mirrorWith(t, map[string][]byte{
		"nginx-1.26.3.tar.gz.asc": detachSign(t, intruder, tarball, created.Add(time.Minute), true),
		// Even served under its own name, an unpinned key is never asked for.
		fpr(intruder) + ".asc": armoredPublic(t, intruder),
	})
	url, c := serve(t, http.FileServer(http.Dir(dir)))
	cache := t.TempDir()
	comp := signedNginx(l, "nginx-1.26.3.tar.gz.asc", opensslKey)
	_, err := fastFetcher(t, cache, url).Fetch(context.Background(), comp)
	if err == nil {
		t.Fatal("accepted a signature by an unpinned key")
	}
	var se *source.SignerError
	if !errors.As(err, &se) {
		t.Fatalf("error is not a *SignerError: %v", err)
	}
	keyID := fmt.Sprintf("%016X", intruder.PrimaryKey.KeyId)
	if se.KeyID != keyID {
		t.Errorf("SignerError.KeyID = %s, want %s", se.KeyID, keyID)
	}
	for _, want := range []string{fpr(intruder), opensslKey, "nginx-1.26.3.tar.gz.asc"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %s:\n%v", want, err)
		}
	}
	if n := c.count("/" + fpr(intruder) + ".asc"); n != 0 {
		t.Errorf("fetched the unpinned key %d times", n)
	}
	if _, err := os.Stat(filepath.Join(cache, "sha256", comp.SHA256, "nginx-1.26.3.tar.gz.asc")); err == nil {
		t.Error("the rejected signature was cached")
	}
	t.Logf("error: %v", err)
}

// OpenSSL's real signature, by the pinned key, served as nginx's: the key is right, the
// signature is of another file.
func TestSignatureOfAnotherFile(t *testing.T) {
	l := testLock(t)
	dir := mirrorWith(t, map[string][]byte{"nginx-1.26.3.tar.gz.asc": readMirror(t, "openssl-3.5.7.tar.gz.asc")})
	url, _ := serve(t, http.FileServer(http.Dir(dir)))
	_, err := fastFetcher(t, t.TempDir(), url).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", opensslKey))
	if err == nil || !strings.Contains(err.Error(), "does not verify nginx-1.26.3.tar.gz") {
		t.Fatalf("err = %v, want a verification failure naming the file", err)
	}
	t.Logf("error: %v", err)
}

// A key that had expired before it signed is refused, even though the fetcher accepts keys
// that expired after signing. The key's life is cut short by a newer self-signature (the way
// people retire keys), so the signature, made in between, falls after its expiry.
func TestSignatureAfterKeyExpiry(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	t0 := time.Now().Add(-48 * time.Hour)
	key := testKey(t, "retired", t0)
	sig := detachSign(t, key, tarball, t0.Add(2*time.Hour), true)
	for _, id := range key.Identities {
		ss := *id.SelfSignature
		ss.CreationTime = t0.Add(3 * time.Hour)
		life := uint32(3600) // expired one hour after creation, before the signature
		ss.KeyLifetimeSecs = &life
		if err := ss.SignUserId(id.UserId.Id, key.PrimaryKey, key.PrivateKey, &packet.Config{Time: func() time.Time { return ss.CreationTime }}); err != nil {
			t.Fatal(err)
		}
		id.SelfSignature = &ss
		id.Signatures = append(id.Signatures, &ss)
	}
	dir := mirrorWith(t, map[string][]byte{
		"nginx-1.26.3.tar.gz.asc": sig,
		fpr(key) + ".asc":         armoredPublic(t, key),
	})
	url, _ := serve(t, http.FileServer(http.Dir(dir)))
	_, err := fastFetcher(t, t.TempDir(), url).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(key)))
	if err == nil || !strings.Contains(err.Error(), "had already expired") {
		t.Fatalf("err = %v, want the key to be called expired at signing time", err)
	}
	t.Logf("error: %v", err)
}

func TestKeyWithWrongFingerprintRefused(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	pinned := testKey(t, "pinned", created)
	other := testKey(t, "impostor", created)
	dir := mirrorWith(t, map[string][]byte{
		"nginx-1.26.3.tar.gz.asc": detachSign(t, pinned, tarball, created.Add(time.Minute), true),
		// The mirror answers the pinned fingerprint with another key.
		fpr(pinned) + ".asc": armoredPublic(t, other),
	})
	url, _ := serve(t, http.FileServer(http.Dir(dir)))
	cache := t.TempDir()
	_, err := fastFetcher(t, cache, url).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(pinned)))
	if err == nil {
		t.Fatal("accepted a key whose fingerprint is not the pinned one")
	}
	for _, want := range []string{"refusing key", fpr(pinned), fpr(other)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not mention %q:\n%v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(cache, "keys", fpr(pinned)+".asc")); err == nil {
		t.Error("the refused key was cached")
	}
	t.Logf("error: %v", err)
}

// With a mirror and explicit key servers, keys that are not vendored come from the key
// servers (by-fingerprint path as on keys.openpgp.org, or a query with %s as in HKP), tried in
// order, and files from the mirror.
func TestKeyserver(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	key := testKey(t, "keyserver", created)
	dir := mirrorWith(t, map[string][]byte{
		"nginx-1.26.3.tar.gz.asc": detachSign(t, key, tarball, created.Add(time.Minute), true),
		fpr(key) + ".asc":         armoredPublic(t, key),
	})
	mirror, mc := serve(t, http.FileServer(http.Dir(dir)))
	comp := signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(key))

	mux := http.NewServeMux()
	mux.HandleFunc("/vks/v1/by-fingerprint/"+fpr(key), func(w http.ResponseWriter, r *http.Request) {
		w.Write(armoredPublic(t, key))
	})
	ks, kc := serve(t, mux)
	f := fastFetcher(t, t.TempDir(), mirror, source.WithKeyserver(ks+"/vks/v1/by-fingerprint/"))
	v, err := f.Fetch(context.Background(), comp)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Signed || v.SignerVendored || kc.total() != 1 || mc.count("/"+fpr(key)+".asc") != 0 {
		t.Errorf("signed=%v vendored=%v, key server requests %d, mirror key requests %d", v.Signed, v.SignerVendored, kc.total(), mc.count("/"+fpr(key)+".asc"))
	}

	// A key server that takes the fingerprint as a query, after one that does not have the
	// key; and a bare server name, which means its HKP lookup.
	var query string
	qs, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pks/lookup" {
			http.NotFound(w, r)
			return
		}
		query = r.URL.RawQuery
		w.Write(armoredPublic(t, key))
	}))
	empty, ec := serve(t, http.NotFoundHandler())
	for _, ksURL := range []string{qs + "/pks/lookup?op=get&search=0x%s", qs, qs + "/"} {
		query = ""
		f = fastFetcher(t, t.TempDir(), mirror, source.WithKeyserver(empty+"/k/%s", ksURL))
		if _, err := f.Fetch(context.Background(), comp); err != nil {
			t.Fatalf("key server %s: %v", ksURL, err)
		}
		want := "op=get&options=mr&search=0x" + fpr(key)
		if strings.Contains(ksURL, "%s") {
			want = "op=get&search=0x" + fpr(key)
		}
		if query != want {
			t.Errorf("key server %s: query %q, want %q", ksURL, query, want)
		}
	}
	if ec.count("/k/"+fpr(key)) != 3 {
		t.Errorf("the first key server was asked %d times, want once per fetch (3)", ec.count("/k/"+fpr(key)))
	}

	for _, bad := range []string{"ftp://keys.example/", "keyserver.ubuntu.com", "https://k.example/lookup?op=get"} {
		_, err := fastFetcher(t, t.TempDir(), mirror, source.WithKeyserver(bad)).Fetch(context.Background(), comp)
		if err == nil || !strings.Contains(err.Error(), bad) {
			t.Errorf("key server %q: err = %v, want a refusal naming it", bad, err)
		}
	}
}

// truncating serves body, but the first `failures` responses announce the full length, send
// half, and drop the connection.
func truncating(body []byte, failures int) http.Handler {
	var mu sync.Mutex
	n := 0
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		cut := n <= failures
		mu.Unlock()
		if !cut {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		conn.Close()
	})
}

func TestTruncatedDownload(t *testing.T) {
	l := testLock(t)
	nginx := l.MustComponent(lock.Nginx)
	body := readMirror(t, nginx.FileName())

	t.Run("retried", func(t *testing.T) {
		url, c := serve(t, truncating(body, 2))
		cache := t.TempDir()
		v, err := fastFetcher(t, cache, url, source.WithRetries(3)).Fetch(context.Background(), nginx)
		if err != nil {
			t.Fatal(err)
		}
		if n := c.total(); n != 3 {
			t.Errorf("%d requests, want 3 (two cut off, one whole)", n)
		}
		b, _ := os.ReadFile(v.Path)
		if sha(b) != nginx.SHA256 {
			t.Error("cached file is not the whole tarball")
		}
		if ents, _ := os.ReadDir(filepath.Join(cache, "tmp")); len(ents) != 0 {
			t.Errorf("%d temporary files left", len(ents))
		}
	})
	t.Run("gives up", func(t *testing.T) {
		url, c := serve(t, truncating(body, 1000))
		cache := t.TempDir()
		_, err := fastFetcher(t, cache, url, source.WithRetries(2)).Fetch(context.Background(), nginx)
		if err == nil {
			t.Fatal("a download that is always cut off succeeded")
		}
		if n := c.total(); n != 3 {
			t.Errorf("%d requests, want 3 (one try and two retries)", n)
		}
		if !strings.Contains(err.Error(), "gave up after 3 attempts") {
			t.Errorf("error does not say it gave up: %v", err)
		}
		assertNothingCached(t, cache, nginx.SHA256)
		t.Logf("error: %v", err)
	})
}

func TestSizeCap(t *testing.T) {
	l := testLock(t)
	nginx := l.MustComponent(lock.Nginx)
	body := readMirror(t, nginx.FileName())
	const limit = 1 << 20 // the nginx tarball is 1.2 MiB
	for _, tc := range []struct {
		name    string
		handler http.Handler
	}{
		{"announced length", http.FileServer(http.Dir(testenv.MirrorDir(t)))},
		{"no length (chunked)", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for b := body; len(b) > 0; {
				n := min(len(b), 64<<10)
				w.Write(b[:n])
				w.(http.Flusher).Flush()
				b = b[n:]
			}
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, c := serve(t, tc.handler)
			cache := t.TempDir()
			_, err := fastFetcher(t, cache, url, source.WithMaxSize(limit)).Fetch(context.Background(), nginx)
			var se *source.SizeError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *SizeError", err)
			}
			if !strings.Contains(err.Error(), strconv.Itoa(limit)) || strings.Contains(err.Error(), "WithMaxSize") {
				t.Errorf("error does not give the limit and the fix: %v", err)
			}
			if n := c.total(); n != 1 {
				t.Errorf("%d requests: an oversized file is not retried", n)
			}
			assertNothingCached(t, cache, nginx.SHA256)
		})
	}
	// At the cap exactly is fine.
	url, _ := serve(t, http.FileServer(http.Dir(testenv.MirrorDir(t))))
	if _, err := fastFetcher(t, t.TempDir(), url, source.WithMaxSize(int64(len(body)))).Fetch(context.Background(), nginx); err != nil {
		t.Errorf("a file exactly at the cap: %v", err)
	}
}

func TestServerErrorIsRetried(t *testing.T) {
	l := testLock(t)
	zlib := l.MustComponent(lock.Zlib)
	body := readMirror(t, zlib.FileName())
	var mu sync.Mutex
	n := 0
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if first {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		w.Write(body)
	}))
	if _, err := fastFetcher(t, t.TempDir(), url).Fetch(context.Background(), zlib); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// A key revoked as retired after it signed still vouches for what it signed before; a key
// revoked as compromised never does, whenever the revocation was made.
func TestRevokedKey(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	t0 := time.Now().Add(-48 * time.Hour)
	for _, tc := range []struct {
		reason packet.ReasonForRevocation
		ok     bool
	}{
		{packet.KeyRetired, true},
		{packet.KeySuperseded, true},
		{packet.KeyCompromised, false},
	} {
		t.Run(fmt.Sprintf("reason %d", tc.reason), func(t *testing.T) {
			key := testKey(t, "revoked", t0)
			sig := detachSign(t, key, tarball, t0.Add(time.Hour), true)
			if err := key.RevokeKey(tc.reason, "test", &packet.Config{Time: func() time.Time { return t0.Add(2 * time.Hour) }}); err != nil {
				t.Fatal(err)
			}
			dir := mirrorWith(t, map[string][]byte{
				"nginx-1.26.3.tar.gz.asc": sig,
				fpr(key) + ".asc":         armoredPublic(t, key),
			})
			url, _ := serve(t, http.FileServer(http.Dir(dir)))
			_, err := fastFetcher(t, t.TempDir(), url).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(key)))
			if tc.ok && err != nil {
				t.Fatalf("signature made before the key was retired: %v", err)
			}
			if !tc.ok && (err == nil || !strings.Contains(err.Error(), "revoked")) {
				t.Fatalf("err = %v, want a refusal naming the revocation", err)
			}
		})
	}
}

// A server that stops sending in mid-body is abandoned after the stall timeout and the
// download is retried.
func TestStalledDownload(t *testing.T) {
	l := testLock(t)
	nginx := l.MustComponent(lock.Nginx)
	body := readMirror(t, nginx.FileName())
	var mu sync.Mutex
	n := 0
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		first := n == 1
		mu.Unlock()
		if !first {
			http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	start := time.Now()
	cache := t.TempDir()
	v, err := fastFetcher(t, cache, url, source.WithStallTimeout(300*time.Millisecond)).Fetch(context.Background(), nginx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("%d requests, want 2 (one stalled, one whole)", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s: the stalled request was not abandoned", d)
	}
	b, _ := os.ReadFile(v.Path)
	if sha(b) != nginx.SHA256 {
		t.Error("cached file is not the whole tarball")
	}
}

// BenchmarkFetchAll measures fetching the test lock's four tarballs from a loopback mirror
// into an empty cache ("cold") and verifying them from the cache ("cached": a second build).
// Run: go test -tags integration ./pipeline/source -run '^$' -bench FetchAll
func BenchmarkFetchAll(b *testing.B) {
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, c := range l.Components {
		fi, err := os.Stat(filepath.Join(testenv.MirrorDir(b), c.FileName()))
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	mirror := testenv.Mirror(b)
	ctx := context.Background()
	b.Run("cold", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			b.StopTimer()
			cache := b.TempDir()
			b.StartTimer()
			if _, err := source.New(source.WithCacheDir(cache), source.WithMirror(mirror)).FetchAll(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		cache := b.TempDir()
		f := source.New(source.WithCacheDir(cache), source.WithMirror(mirror))
		if _, err := f.FetchAll(ctx, l); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(size)
		for b.Loop() {
			if _, err := f.FetchAll(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A signature dated after the current time (by the fetcher's clock) is refused: either the
// clock is wrong or the date is forged, and both deserve a look.
func TestSignatureFromTheFuture(t *testing.T) {
	l := testLock(t)
	tarball := readMirror(t, "nginx-1.26.3.tar.gz")
	created := time.Now().Add(-time.Hour)
	key := testKey(t, "future", created)
	dir := mirrorWith(t, map[string][]byte{
		"nginx-1.26.3.tar.gz.asc": detachSign(t, key, tarball, created.Add(time.Minute), true),
		fpr(key) + ".asc":         armoredPublic(t, key),
	})
	url, _ := serve(t, http.FileServer(http.Dir(dir)))
	past := func() time.Time { return created.Add(-72 * time.Hour) }
	_, err := fastFetcher(t, t.TempDir(), url, source.WithNow(past)).Fetch(context.Background(), signedNginx(l, "nginx-1.26.3.tar.gz.asc", fpr(key)))
	if err == nil || !strings.Contains(err.Error(), "in the future") {
		t.Fatalf("err = %v, want a refusal of a future signature", err)
	}
}

// A private mirror's credentials (--mirror http://user:password@host) reach the server but
// never a log line or an error: -v prints every fetch and every retry.
func TestMirrorPasswordNeverPrinted(t *testing.T) {
	l := testLock(t)
	zlib := l.MustComponent(lock.Zlib)
	body := readMirror(t, zlib.FileName())
	var mu sync.Mutex
	n, authed := 0, 0
	url, _ := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if u, p, ok := r.BasicAuth(); ok && u == "user" && p == "s3cret" {
			authed++
		}
		n++
		switch {
		case strings.Contains(r.URL.Path, "absent"):
			http.NotFound(w, r)
		case n == 1:
			http.Error(w, "try later", http.StatusServiceUnavailable)
		default:
			w.Write(body)
		}
	}))
	withCreds := strings.Replace(url, "http://", "http://user:s3cret@", 1)
	logs := &logs{}
	f := fastFetcher(t, t.TempDir(), withCreds, source.WithSink(logs))
	if _, err := f.Fetch(context.Background(), zlib); err != nil {
		t.Fatal(err)
	}
	if authed != 2 || n != 2 {
		t.Errorf("%d of %d requests carried the mirror's credentials, want 2 of 2", authed, n)
	}
	// A missing file: the error names the URL.
	missing := zlib
	missing.URL = strings.Replace(zlib.URL, zlib.FileName(), "absent.tar.gz", 1)
	_, err := fastFetcher(t, t.TempDir(), withCreds, source.WithSink(logs)).Fetch(context.Background(), missing)
	if err == nil {
		t.Fatal("fetching an absent file succeeded")
	}
	if !strings.Contains(logs.String(), "retrying") || !strings.Contains(logs.String(), "fetched") {
		t.Fatalf("the log lacks the retry or the fetch, so it proves nothing:\n%s", logs.String())
	}
	for what, s := range map[string]string{"log": logs.String(), "error": err.Error()} {
		if strings.Contains(s, "s3cret") {
			t.Errorf("the %s shows the mirror's password:\n%s", what, s)
		}
	}
}

// mirrorWith makes a mirror directory holding links to the real upstream files, overridden or
// extended by files.
func mirrorWith(t *testing.T, files map[string][]byte) string {
	t.Helper()
	real := testenv.MirrorDir(t)
	dir := t.TempDir()
	ents, err := os.ReadDir(real)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.Symlink(filepath.Join(real, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for name, b := range files {
		os.Remove(filepath.Join(dir, name))
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
