package upstream

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/redirects"
)

// tokenSafe is c's HTTP client for a request to u that carries the GitHub token: a redirect
// keeps the Authorization header only to exactly u's origin, the same scheme, host and port.
// net/http is laxer: it keeps the header for the same host on another port, and for a
// subdomain; a token given for the API must not reach another service on that machine.
func (c *client) tokenSafe(u *url.URL) *http.Client {
	if c.token == "" {
		return c.http
	}
	h := *c.http
	next := c.http.CheckRedirect
	h.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if !sameOrigin(req.URL, u) {
			req.Header.Del("Authorization")
		}
		if next != nil {
			return next(req, via)
		}
		return redirects.Check(req, via)
	}
	return &h
}

// sameOrigin compares scheme, host and port (the scheme's default port when none is given).
func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Hostname(), b.Hostname()) && port(a) == port(b)
}

func port(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	if strings.EqualFold(u.Scheme, "https") {
		return "443"
	}
	return "80"
}
