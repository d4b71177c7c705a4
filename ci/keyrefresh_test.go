package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// expiringSigner is the scenario's OpenSSL signed by a vendored key whose vendored copy
// expires between the locked release's signature and the new one's: what a scheduled run
// meets when upstream extended its key after the copy in pipeline/lock/keys was made.
type expiringSigner struct {
	*upstreamtest.Scenario
	key, extended *upstreamtest.Key
	keysDir       string
	ks            *upstreamtest.Keyserver
	body          string
}

func newExpiringSigner(t *testing.T) *expiringSigner {
	t.Helper()
	notInActions(t)
	s := upstreamtest.NewScenario(t)
	// Expires 5 minutes before the new release is signed, 25 minutes after the locked one.
	life := upstreamtest.NewSignedAt.Add(-5 * time.Minute).Sub(upstreamtest.KeysCreatedAt)
	k := upstreamtest.NewExpiringKey(t, "OpenSSL Expiring Signer", upstreamtest.KeysCreatedAt, life)
	s.Upstream.SetFile("openssl-"+upstreamtest.LockedOpenSSL+".tar.gz.asc", k.SignAt(t, s.Locked, upstreamtest.LockedSignedAt))
	// Upstream extended the key by a year just before signing the new release with it; the
	// vendored copy (k.Armored) predates that.
	ext := k.Extended(t, upstreamtest.NewSignedAt.Add(-2*time.Minute), extendedLife)
	s.Upstream.SetFile(upstreamtest.SignatureName, ext.SignAt(t, s.Tarball, upstreamtest.NewSignedAt))
	l, err := lock.Load(s.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	c := l.MustComponent(lock.OpenSSL)
	c.Signature.Fingerprints = []string{k.Fingerprint}
	l.SetComponent(c)
	if err := l.Write(s.LockFile); err != nil {
		t.Fatal(err)
	}
	e := &expiringSigner{Scenario: s, key: k, extended: ext, keysDir: lock.KeysDirBeside(s.LockFile), ks: upstreamtest.NewKeyserver(t),
		body: filepath.Join(t.TempDir(), "body.md")}
	if err := os.MkdirAll(e.keysDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.vendoredFile(), k.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

const extendedLife = 365 * 24 * time.Hour

func (e *expiringSigner) vendoredFile() string {
	return filepath.Join(e.keysDir, e.key.Fingerprint+".asc")
}

func (e *expiringSigner) run(t *testing.T) (int, string, string) {
	t.Helper()
	return runCheckUpdatesOn(t, e.Upstream, e.Registry, e.LockFile, []string{e.key.Fingerprint},
		"--write", "--skip-images", "--pr-body", e.body, "--keyserver", e.ks.URL)
}

// keyLifetime is how long the key in the armored file lives by its newest self-signature
// (0: forever).
func keyLifetime(t *testing.T, armored []byte) time.Duration {
	t.Helper()
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil || len(el) != 1 {
		t.Fatalf("reading the key file: %d keys, %v", len(el), err)
	}
	ps, _ := el[0].PrimarySelfSignature()
	if ps == nil || ps.KeyLifetimeSecs == nil {
		return 0
	}
	return time.Duration(*ps.KeyLifetimeSecs) * time.Second
}

// Upstream extended its signing key after the vendored copy was made, and signed a release
// after the copy's expiry: the update fetches the key's current copy, checks it is the same
// key, verifies the release with it and refreshes the vendored file in the same change, for
// review; the new lock then builds without a key server.
func TestUpdateRefreshesAnExpiredVendoredKey(t *testing.T) {
	e := newExpiringSigner(t)
	e.ks.Serve(e.key.Fingerprint, e.extended.Armored)
	code, out, errs := e.run(t)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, errs, out)
	}
	l, err := lock.Load(e.LockFile)
	if err != nil {
		t.Fatal(err)
	}
	if c := l.MustComponent(lock.OpenSSL); c.Version != upstreamtest.NewOpenSSL {
		t.Errorf("openssl = %s, want %s", c.Version, upstreamtest.NewOpenSSL)
	}
	b, err := os.ReadFile(e.vendoredFile())
	if err != nil {
		t.Fatal(err)
	}
	if got := keyLifetime(t, b); got != extendedLife {
		t.Errorf("the vendored key now lives %s, want the extended %s", got, extendedLife)
	}
	body, _ := os.ReadFile(e.body)
	for _, want := range []string{"### Refreshed signer keys: review these keys",
		"| `pipeline/lock/keys/" + e.key.Fingerprint + ".asc` | `" + e.key.Fingerprint + "` | OpenSSL Expiring Signer (nginx-forge test key) <openssl.expiring.signer@example.test> | " +
			upstreamtest.KeysCreatedAt.Add(extendedLife).UTC().Format("2006-01-02") + " | " + e.ks.URL,
		"its vendored copy said it had expired before this release was signed"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("the pull request body lacks %q:\n%s", want, body)
		}
	}
	if !strings.Contains(out, "warning: openssl "+upstreamtest.NewOpenSSL+": refreshed the vendored signer key "+e.key.Fingerprint) {
		t.Errorf("no warning names the refreshed key:\n%s", out)
	}

	// The build's verification of the new lock: the keys directory beside it, no key server.
	f := source.New(source.WithMirror(e.Upstream.Mirror()), source.WithCacheDir(t.TempDir()), source.WithKeysDir(e.keysDir),
		source.WithKeyserver("http://127.0.0.1:1"), source.WithRetries(0))
	v, err := f.Fetch(context.Background(), l.MustComponent(lock.OpenSSL))
	if err != nil {
		t.Fatalf("verifying the updated OpenSSL without a key server: %v", err)
	}
	if !v.Signed || v.SignedBy != e.key.Fingerprint || !v.SignerVendored {
		t.Errorf("verified %+v; want signed by the vendored %s", v, e.key.Fingerprint)
	}
}

// Fail closed: a key server copy that does not extend the key, or that is another key, is
// refused, with the fix; the lock and the vendored file stay as they were.
func TestUpdateRefusesAnExpiredKeyItCannotRefresh(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve func(e *expiringSigner) []byte
		want  string
	}{
		{"the same copy, still expired", func(e *expiringSigner) []byte { return e.key.Armored }, "had already expired then"},
		{"another key under its fingerprint", func(e *expiringSigner) []byte {
			return upstreamtest.NewKey(t, "Impostor").Armored
		}, "no current copy of the key could be fetched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newExpiringSigner(t)
			e.ks.Serve(e.key.Fingerprint, tc.serve(e))
			before := e.LockBytes(t)
			code, out, errs := e.run(t)
			if code != 1 {
				t.Fatalf("exit %d, want 1 (nothing written); stderr:\n%s\nstdout:\n%s", code, errs, out)
			}
			fix := "replace pipeline/lock/keys/" + e.key.Fingerprint + ".asc"
			for _, want := range []string{tc.want, fix} {
				if !strings.Contains(errs, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errs)
				}
			}
			if !bytes.Equal(e.LockBytes(t), before) {
				t.Error("the lock changed")
			}
			if b, err := os.ReadFile(e.vendoredFile()); err != nil || !bytes.Equal(b, e.key.Armored) {
				t.Errorf("the vendored key file changed (%v)", err)
			}
		})
	}
}
