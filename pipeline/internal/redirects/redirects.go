// Package redirects is the one redirect policy of the HTTP clients that look for and fetch
// releases (pipeline/upstream's GitHub and nginx.org clients; pipeline/source's downloads
// can take it as their http.Client's CheckRedirect): a redirect back to a URL already
// visited is a redirect loop, named as such at once, and a chain longer than net/http's 10
// is named too. Neither clears by itself, so neither is transient (Retryable is false):
// another try follows the same redirects.
package redirects

import (
	"fmt"
	"net/http"
	"net/url"
)

// maxRedirects is net/http's own limit.
const maxRedirects = 10

// LoopError is a redirect loop (Repeated: the server sent the client back to a URL of the
// chain) or a chain of more than 10 redirects. URLs are shown without user information.
type LoopError struct {
	From     string // the URL first asked for
	To       string // the redirect that was not followed
	Hops     int    // redirects followed before it
	Repeated bool
}

func (e *LoopError) Error() string {
	if e.Repeated {
		return fmt.Sprintf("redirect loop: %s redirects back to %s after %d redirect(s); the server's redirects go in a circle: fix them, or give a URL that answers directly", e.From, e.To, e.Hops)
	}
	return fmt.Sprintf("too many redirects: %s was redirected %d times, the last to %s (a redirect loop through changing URLs?): fix the server's redirects, or give a URL that answers directly", e.From, e.Hops, e.To)
}

// Retryable is false: the next try follows the same redirects (see netfail.Transient).
func (e *LoopError) Retryable() bool { return false }

// Check is an http.Client's CheckRedirect: it refuses a redirect to a URL already in the
// chain, and the 11th redirect, with a *LoopError.
func Check(req *http.Request, via []*http.Request) error {
	if len(via) == 0 {
		return nil
	}
	to := req.URL.String()
	for _, v := range via {
		if v.URL.String() == to {
			return &LoopError{From: shown(via[0].URL), To: shown(req.URL), Hops: len(via), Repeated: true}
		}
	}
	if len(via) >= maxRedirects {
		return &LoopError{From: shown(via[0].URL), To: shown(req.URL), Hops: len(via)}
	}
	return nil
}

func shown(u *url.URL) string { return u.Redacted() }
