package source

import (
	"context"
	"fmt"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
)

// ExpiredSignerError is a signature made by a pinned key that, by the copy of the key at
// hand, had already expired when it signed. Upstream projects extend their signing keys'
// lives by re-signing them; a vendored copy made before that says the key expired, and every
// later release then looks signed by an expired key until the copy is refreshed (RefreshKey).
type ExpiredSignerError struct {
	File, URL   string // the signature file and where it came from
	Fingerprint string // the signer's primary fingerprint
	SignedAt    time.Time
	// Vendored: the copy that says so is a reviewed one (pipeline/lock/keys or the keys
	// directory beside the lock), which an update may refresh.
	Vendored bool
	Err      error
}

func (e *ExpiredSignerError) Error() string {
	fix := "ask upstream for a signature by a valid key, and check it out of band before changing the lock"
	if e.Vendored {
		fix = fmt.Sprintf("if upstream has extended the key's life since, `ci check-updates --write` refreshes %s/%s.asc from a key server for review; "+
			"otherwise %s", lock.KeysDir, e.Fingerprint, fix)
	}
	return fmt.Sprintf("signature %s from %s was made on %s by pinned key %s, which had already expired then: %v (%s)",
		e.File, e.URL, e.SignedAt.UTC().Format(time.RFC3339), e.Fingerprint, e.Err, fix)
}

func (e *ExpiredSignerError) Unwrap() error { return e.Err }

// RefreshKey fetches the current copy of the pinned key fpr from the mirror or the key
// servers, bypassing the vendored copy, and uses it in place of the vendored one for the rest
// of this Fetcher's life. The copy must hold the key with exactly that primary fingerprint,
// every self-signature and binding must verify, and it must have user IDs (as SignerKey
// requires of a key to vendor). It does not make any signature valid by itself: a signature
// is still verified at the moment it was made, now against the owner's current
// self-signatures, and a hard revocation in the new copy counts.
func (f *Fetcher) RefreshKey(ctx context.Context, fpr string) (SignerKey, error) {
	if err := f.checkKeyRequest(fpr); err != nil {
		return SignerKey{}, err
	}
	k, err := f.fetchSignerKey(ctx, fpr)
	if err != nil {
		return SignerKey{}, err
	}
	f.refreshMu.Lock()
	if f.refreshed == nil {
		f.refreshed = map[string][]byte{}
	}
	f.refreshed[fpr] = k.Armored
	f.refreshMu.Unlock()
	f.sink.Send(progress.Detailf("key %s: fetched a current copy from %s (fingerprint verified); it stands for the vendored copy in this run", fpr, k.Source))
	return k, nil
}
