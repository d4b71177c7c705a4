package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// DefaultGitHubAPI is the GitHub REST API root.
const DefaultGitHubAPI = "https://api.github.com"

// maxPages bounds pagination: openssl/openssl has several hundred tags (about 7 pages of
// 100); a Link chain longer than this is a misbehaving server, not a repository.
const maxPages = 30

// maxAPIBody bounds one API answer: a page of 100 tags or releases is well under a MB; a
// larger answer is a misbehaving server, refused as too large rather than cut and then
// misreported as bad JSON.
const maxAPIBody = 16 << 20

// maxListBytes bounds the answers of one list across all its pages: openssl/openssl's
// releases, the largest list read, are a few MB with their notes. A hostile API once made one
// tag list cost 3.6 GB of memory (30 pages of 16 MB, every item kept whole, eight lists at
// once; issue 47): now a list reads at most this many bytes, and of each item only the names
// are kept.
const maxListBytes = 32 << 20

// ghRelease is the part of a GitHub release object we read.
type ghRelease struct {
	TagName    string `json:"tag_name"`
	Draft      bool   `json:"draft"`
	Prerelease bool   `json:"prerelease"`
}

// ghTag is the part of a GitHub tag object we read.
type ghTag struct {
	Name string `json:"name"`
}

// GitHubReleases lists the final release versions of component published on GitHub.
//
// It reads both the releases and the tags of the repository: the releases carry the
// pre-release and draft flags, while the tags also cover releases that have no GitHub
// release object (older nginx stable patch releases are tags only). A tag whose release is
// marked draft or pre-release is left out even if its name looks final. For a repository
// whose releases are its tags (repo.TagsOnly) only the tags are read.
func (c *client) GitHubReleases(ctx context.Context, component string) ([]version, error) {
	vs, _, err := c.GitHubReleaseTags(ctx, component)
	return vs, err
}

// GitHubReleaseTags is GitHubReleases with, for each version (version.String), the names of
// the tags that name it, as listed (a component pinned by git commit is moved to the commit
// of its new release's tag).
func (c *client) GitHubReleaseTags(ctx context.Context, component string) ([]version, map[string][]string, error) {
	repo := upstreamOf(component)
	if repo.GitHub == "" {
		return nil, nil, fmt.Errorf("component %q has no known upstream repository", component)
	}
	var releases []ghRelease
	if !repo.TagsOnly {
		if err := c.ghList(ctx, "/repos/"+repo.GitHub+"/releases", func(body []byte) (int, error) {
			var page []ghRelease
			err := json.Unmarshal(body, &page)
			releases = append(releases, page...)
			return len(page), err
		}); err != nil {
			return nil, nil, err
		}
	}
	var tags []ghTag
	if err := c.ghList(ctx, "/repos/"+repo.GitHub+"/tags", func(body []byte) (int, error) {
		var page []ghTag
		err := json.Unmarshal(body, &page)
		tags = append(tags, page...)
		return len(page), err
	}); err != nil {
		return nil, nil, err
	}
	if err := checkNamed(repo.GitHub, releases, tags); err != nil {
		return nil, nil, err
	}
	excluded := map[string]bool{}
	// Keyed by the release (canonical: 1.4 and 1.4.0 are one), so two tags that spell one
	// release differently (v1.4, v1.4.0) give one version, the same on every run
	// (sameRelease), with the tags of both.
	found := map[string]version{}
	names := map[string][]string{}
	add := func(tag string) {
		if v, ok := versionFromTag(component, tag); ok {
			key := v.canonical()
			if old, seen := found[key]; !seen || preferSpelling(v, old) {
				found[key] = v
			}
			if !slices.Contains(names[key], tag) {
				names[key] = append(names[key], tag)
			}
		}
	}
	for _, r := range releases {
		if r.Draft || r.Prerelease {
			excluded[r.TagName] = true
			continue
		}
		add(r.TagName)
	}
	for _, t := range tags {
		if !excluded[t.Name] {
			add(t.Name)
		}
	}
	if len(found) == 0 && len(releases)+len(tags) > 0 {
		return nil, nil, unreadTags(repo.GitHub, releases, tags)
	}
	out := make([]version, 0, len(found))
	byString := make(map[string][]string, len(found))
	for key, v := range found {
		out = append(out, v)
		byString[v.String()] = names[key]
	}
	sortVersions(out)
	return out, byString, nil
}

// unreadTags is a list that has tags, none of which names a release: said with what was seen
// (a few names, quoted and shortened: they come from the API), not as a list with no tags.
func unreadTags(repo string, releases []ghRelease, tags []ghTag) error {
	var seen []string
	for _, t := range tags {
		if len(seen) < 3 {
			seen = append(seen, fmt.Sprintf("%.40q", t.Name))
		}
	}
	for _, r := range releases {
		if len(seen) < 3 {
			seen = append(seen, fmt.Sprintf("%.40q", r.TagName))
		}
	}
	return fmt.Errorf("GitHub lists %d tags and %d releases for %s, none of them a release tag this program reads (drafts and pre-releases left out; seen: %s): check --github-api, or the repository's tag naming",
		len(tags), len(releases), repo, strings.Join(seen, ", "))
}

// errNotAList marks a GitHub answer that is not the list asked for: not a list of
// GitHub's release or tag objects (a wrong --github-api, a proxy's page), as opposed to a
// list with no release in it.
var errNotAList = errors.New("not GitHub's list: check --github-api")

// checkNamed refuses a release or tag list whose entries have no tag name: JSON that
// parses but is not GitHub's list, which must not read as "lists no release tags".
func checkNamed(repo string, releases []ghRelease, tags []ghTag) error {
	for i, r := range releases {
		if r.TagName == "" {
			return fmt.Errorf("listing /repos/%s/releases: entry %d has no \"tag_name\" (%w)", repo, i, errNotAList)
		}
	}
	for i, t := range tags {
		if t.Name == "" {
			return fmt.Errorf("listing /repos/%s/tags: entry %d has no \"name\" (%w)", repo, i, errNotAList)
		}
	}
	return nil
}

// ghList GETs every page of a GitHub list endpoint and gives each page's body to decode,
// which keeps what it needs of the items (the names: the structs read only those fields).
// All pages together may be at most maxListBytes.
func (c *client) ghList(ctx context.Context, path string, decode func(body []byte) (int, error)) error {
	base, err := url.Parse(c.githubAPI)
	if err != nil {
		return fmt.Errorf("GitHub API URL %q: %w", c.githubAPI, err)
	}
	next := strings.TrimSuffix(c.githubAPI, "/") + path + "?per_page=100"
	var total int64
	for page := 1; next != ""; page++ {
		if page > maxPages {
			return fmt.Errorf("listing %s: more than %d pages; refusing to follow the Link chain further", path, maxPages)
		}
		u, err := url.Parse(next)
		if err != nil {
			return fmt.Errorf("listing %s: bad next-page link %q: %w", path, next, err)
		}
		// The token is only ever sent to the configured API host: a Link header that points
		// elsewhere is refused rather than followed with credentials.
		if u.Scheme != base.Scheme || u.Host != base.Host {
			return fmt.Errorf("listing %s: next-page link %q leaves the API host %s", path, next, base.Host)
		}
		limit := min(maxAPIBody, maxListBytes-total)
		resp, body, err := c.ghGet(ctx, u, limit)
		if err != nil {
			if errors.As(err, new(*source.SizeError)) && limit < maxAPIBody {
				return fmt.Errorf("listing %s: the pages so far and page %d hold more than the limit of %d bytes on one list (GitHub's largest list read here is a few MB; check --github-api): %w", path, page, maxListBytes, err)
			}
			return fmt.Errorf("listing %s: %w", path, err)
		}
		total += int64(len(body))
		if resp.StatusCode != http.StatusOK {
			// What the server sent back may quote what it was sent: redacted before it is shown.
			return ghError("listing "+path, resp, []byte(safeio.Redact(string(body), c.token)), c.token != "")
		}
		if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			return fmt.Errorf("listing %s: the response is null, not a JSON array (%w)", path, errNotAList)
		}
		if _, err := decode(body); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) && te.Field != "" {
				return fmt.Errorf("listing %s: decoding items: %w", path, err)
			}
			return fmt.Errorf("listing %s: the response is not a JSON array: %w", path, err)
		}
		next = nextLink(resp.Header.Values("Link"))
	}
	return nil
}

// ghGet does one GET of an API page, retrying transient network errors and 5xx answers (GitHub has
// brief outages; a daily job should not fail on one). Other statuses are returned as they are.
func (c *client) ghGet(ctx context.Context, u *url.URL, limit int64) (*http.Response, []byte, error) {
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		c.sink.Send(progress.Detailf("GET %s", u.Redacted()))
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
		req.Header.Set("User-Agent", userAgent)
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := c.tokenSafe(u).Do(req)
		var body []byte
		if err == nil {
			body, err = readBody(resp, u.Redacted(), limit)
			if errors.As(err, new(*source.SizeError)) {
				return nil, nil, err
			}
			if err == nil && resp.StatusCode < 500 {
				return resp, body, nil
			}
		}
		// Only what the one rule calls transient is tried again: a redirect loop is followed
		// the same way on every try, a name that does not resolve or a certificate not
		// trusted fails the same way (netfail.Transient).
		if attempt >= c.retries || ctx.Err() != nil || (err != nil && !netfail.Transient(err)) {
			if err == nil {
				// A 5xx after the last try: ghError describes it with what the server said.
				return resp, body, nil
			}
			return nil, nil, err
		}
		if err == nil {
			err = &netfail.HTTPStatusError{What: "GET " + u.Redacted(), Code: resp.StatusCode}
		}
		c.sink.Send(progress.Detailf("GET %s failed (%v); retrying in %s", u.Redacted(), err, wait))
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// errRateLimited is returned (wrapped) when GitHub refuses for the API rate limit.
var errRateLimited = errors.New("GitHub API rate limit exhausted")

// ghError describes a refused API request; what is the request ("listing /repos/...").
func ghError(what string, resp *http.Response, body []byte, authed bool) error {
	var msg struct {
		Message string `json:"message"`
	}
	_ = json.Unmarshal(body, &msg)
	detail := strings.TrimSpace(msg.Message)
	if detail == "" {
		detail = strings.TrimSpace(string(body))
		if len(detail) > 200 {
			detail = detail[:200] + "..."
		}
	}
	if (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusTooManyRequests) &&
		(resp.Header.Get("X-RateLimit-Remaining") == "0" || strings.Contains(strings.ToLower(detail), "rate limit")) {
		fix := "set GITHUB_TOKEN (or --github-token-env) to raise the limit"
		if authed {
			fix = "wait until " + resp.Header.Get("X-RateLimit-Reset") + " (Unix time) or use another token"
		}
		return fmt.Errorf("%s: %w (%s): %s", what, errRateLimited, detail, fix)
	}
	return &netfail.HTTPStatusError{What: what, Code: resp.StatusCode, Detail: detail}
}

var linkRE = regexp.MustCompile(`<([^>]+)>\s*;\s*rel="?([a-z]+)"?`)

// nextLink returns the rel="next" target of RFC 8288 Link headers, or "".
func nextLink(headers []string) string {
	for _, h := range headers {
		for _, part := range strings.Split(h, ",") {
			if m := linkRE.FindStringSubmatch(part); m != nil && m[2] == "next" {
				return m[1]
			}
		}
	}
	return ""
}
