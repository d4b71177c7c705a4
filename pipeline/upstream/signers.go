package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// fetchNew fetches and verifies the new release next. When its signer's vendored copy says
// the key had expired before it signed, a current copy of the key is fetched (upstream
// extends its keys' lives by re-signing them) and the release verified again with it; that
// copy is returned, for the update to write over the vendored one and the reviewer to see.
func (u *updater) fetchNew(ctx context.Context, next lock.Component) (source.Verified, *source.SignerKey, error) {
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
	u.sink().Send(progress.Detailf("%s %s: the vendored copy of %s had expired when it signed; verifying with the current copy from %s", next.Name, next.Version, k.Fingerprint, k.Source))
	ver, err = u.Fetcher.FetchNew(ctx, next)
	if err != nil {
		return source.Verified{}, nil, fmt.Errorf("%w (also with the current copy of the key from %s)", err, k.Source)
	}
	return ver, &k, nil
}

// published reports whether upstream (or the mirror) has the file at raw: 200 yes, 404 or
// 410 no, anything else is an error (a server we cannot read must not turn into "unsigned").
func (u *updater) published(ctx context.Context, raw string) (bool, error) {
	src := raw
	if u.Mirror != "" {
		src = strings.TrimSuffix(u.Mirror, "/") + "/" + path.Base(mustURLPath(raw))
	}
	client := u.HTTP
	if client == nil {
		client = &http.Client{Timeout: 60 * time.Second}
	}
	// shown is src for messages: a mirror given with credentials must not print them.
	shown := safeio.RedactURL(src)
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, src, nil)
	if err != nil {
		return false, fmt.Errorf("looking for a signature at %q: %w", shown, err)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := client.Do(req)
	if err != nil {
		return false, fmt.Errorf("looking for a signature at %s: %w", shown, err)
	}
	resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return true, nil
	case http.StatusNotFound, http.StatusGone:
		return false, nil
	}
	return false, &netfail.HTTPStatusError{What: "looking for a signature at " + shown, Code: resp.StatusCode}
}

func mustURLPath(raw string) string {
	if p, err := url.Parse(raw); err == nil && p.Path != "" {
		return p.Path
	}
	return raw
}
