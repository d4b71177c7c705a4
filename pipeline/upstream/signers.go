package upstream

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// fetchNew fetches and verifies the new release next. When its signer's vendored copy says
// the key had expired before it signed, a current copy of the key is fetched (upstream
// extends its keys' lives by re-signing them) and the release verified again with it; that
// copy is returned, for the update to write over the vendored one and the reviewer to see.
func (u *Updater) fetchNew(ctx context.Context, next lock.Component) (source.Verified, *source.SignerKey, error) {
	ver, err := u.Fetcher.FetchNew(ctx, next)
	var expired *source.ExpiredSignerError
	if err == nil || !errors.As(err, &expired) || !expired.Vendored {
		return ver, nil, err
	}
	k, kerr := u.Fetcher.RefreshKey(ctx, expired.Fingerprint)
	if kerr != nil {
		var ke *source.KeyError
		if errors.As(kerr, &ke) {
			// Its own message would call the key not vendored and point at vendoring it.
			kerr = fmt.Errorf("tried %s: %w", strings.Join(ke.Tried, ", "), ke.Err)
		}
		return source.Verified{}, nil, fmt.Errorf("%w; no current copy of the key could be fetched to see whether upstream extended it: %v", err, kerr)
	}
	u.logf("%s %s: the vendored copy of %s had expired when it signed; verifying with the current copy from %s", next.Name, next.Version, k.Fingerprint, k.Source)
	ver, err = u.Fetcher.FetchNew(ctx, next)
	if err != nil {
		return source.Verified{}, nil, fmt.Errorf("%w (also with the current copy of the key from %s)", err, k.Source)
	}
	return ver, &k, nil
}
