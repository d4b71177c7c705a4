package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/redirects"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

const userAgent = "nginx-forge-check-updates"

// DefaultNginxOrg is nginx.org, whose download page lists the current mainline, stable and
// legacy releases.
const DefaultNginxOrg = "https://nginx.org"

// client reads release lists. Its zero value is not usable: call newClient.
type client struct {
	http      *http.Client
	githubAPI string
	nginxOrg  string
	token     string
	sink      progress.Sink
	retries   int
	backoff   time.Duration
}

// clientOption configures a client.
type clientOption func(*client)

// withGitHubAPI points the client at another GitHub API root (tests use a loopback server).
func withGitHubAPI(u string) clientOption { return func(c *client) { c.githubAPI = u } }

// withNginxOrg points the nginx.org fallback at another root.
func withNginxOrg(u string) clientOption { return func(c *client) { c.nginxOrg = u } }

// withToken sends a GitHub token (for the higher rate limit). It is sent only to the GitHub
// API host and never logged.
func withToken(tok string) clientOption { return func(c *client) { c.token = tok } }

// withHTTPClient replaces the HTTP client (default: 60 s timeout per request).
func withHTTPClient(h *http.Client) clientOption { return func(c *client) { c.http = h } }

// withRetries sets how often a GitHub API request that failed on the network or with a 5xx
// status is tried again (default 2), and the first wait (doubling after each try; default 2s).
func withRetries(n int, backoff time.Duration) clientOption {
	return func(c *client) { c.retries, c.backoff = max(n, 0), backoff }
}

// withSink reports each request (URLs only; no headers, so no token) as a Detail note.
func withSink(s progress.Sink) clientOption { return func(c *client) { c.sink = orDiscard(s) } }

// newClient returns a client for the public upstream endpoints unless options say otherwise.
func newClient(opts ...clientOption) *client {
	c := &client{
		http:      &http.Client{Timeout: 60 * time.Second},
		githubAPI: DefaultGitHubAPI,
		nginxOrg:  DefaultNginxOrg,
		sink:      progress.Discard,
		retries:   2,
		backoff:   2 * time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	if c.http.CheckRedirect == nil {
		// A redirect loop is named as one, and not retried (redirects.Check).
		h := *c.http
		h.CheckRedirect = redirects.Check
		c.http = &h
	}
	return c
}

// nginxDownloadRE matches the tarball links of nginx.org/en/download.html.
var nginxDownloadRE = regexp.MustCompile(`/download/nginx-([0-9]+\.[0-9]+\.[0-9]+)\.tar\.gz"`)

// NginxOrgReleases lists the nginx versions linked from nginx.org's download page. The page
// lists only the current mainline, stable and a few legacy releases, which is enough to find
// the newest patch of a supported branch.
func (c *client) NginxOrgReleases(ctx context.Context) ([]version, error) {
	u := strings.TrimSuffix(c.nginxOrg, "/") + "/en/download.html"
	c.sink.Send(progress.Detailf("GET %s", u))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("reading nginx.org download page %q: %w", u, err)
	}
	req.Header.Set("User-Agent", userAgent)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading nginx.org download page %q: %w", u, err)
	}
	body, err := readBody(resp, u, 4<<20)
	if err != nil {
		return nil, fmt.Errorf("reading nginx.org download page: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, &netfail.HTTPStatusError{What: "reading nginx.org download page " + strconv.Quote(u), Code: resp.StatusCode}
	}
	seen := map[string]version{}
	for _, m := range nginxDownloadRE.FindAllSubmatch(body, -1) {
		if v, err := parseVersion(string(m[1])); err == nil {
			seen[v.String()] = v
		}
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("nginx.org download page %q lists no nginx-X.Y.Z.tar.gz (has the page changed?)", u)
	}
	out := make([]version, 0, len(seen))
	for _, v := range seen {
		out = append(out, v)
	}
	sortVersions(out)
	return out, nil
}

// readBody reads and closes resp's body, at most limit bytes. A body over the limit is a
// *source.SizeError and one that stops arriving (the run's deadline, the client's timeout)
// or is cut off is the read error, so that neither is reported as a malformed answer.
func readBody(resp *http.Response, shown string, limit int64) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the answer after %d bytes: %w", shown, len(body), err)
	}
	if int64(len(body)) > limit {
		return nil, &source.SizeError{URL: shown, Limit: limit, Size: -1}
	}
	return body, nil
}

// sortVersions sorts oldest first; equal versions spelled differently (1.4, 1.4.0) in a fixed
// order (preferSpelling's choice last), so the newest is the same whatever the input order.
func sortVersions(vs []version) {
	sort.Slice(vs, func(i, j int) bool {
		if c := vs[i].Compare(vs[j]); c != 0 {
			return c < 0
		}
		return preferSpelling(vs[j], vs[i])
	})
}
