package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/advisory"
	"github.com/nginx-forge/nginx-forge/pipeline/internal/netfail"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/safeio"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// The advisory feeds the scheduled update refreshes the reviewed snapshot from, as the
// snapshot records them (pipeline/advisory/advisories.json "feeds"):
//   - nginx: nginx.org's own source of https://nginx.org/en/security_advisories.html, one
//     XML file in the nginx/nginx.org repository, read raw (no API rate limit).
//   - OpenSSL: one CVE JSON 5 record per CVE in openssl/release-metadata's secjson/. Read as
//     GitHub's contents listing of that directory (one API request, the GitHub token raises
//     its limit; it names each file with its blob ID, size and raw URL), then each record of
//     2024 or later from its raw URL: about 50 small files, each bounded, all of them
//     bounded together. The repository's archive would carry every other file of the
//     repository too, with no size known before it is read.
const (
	DefaultNginxAdvisories   = "https://raw.githubusercontent.com/nginx/nginx.org/main/xml/en/security_advisories.xml"
	DefaultOpenSSLAdvisories = DefaultGitHubAPI + "/repos/openssl/release-metadata/contents/secjson"
)

// FeedFailure is one advisory feed that could not be read into the snapshot.
type FeedFailure struct {
	Component, URL string
	Err            error
	// Fix says what resolves it.
	Fix string
}

func (f FeedFailure) Error() string {
	return fmt.Sprintf("advisory feed %s (%s): %v", f.Component, f.URL, f.Err)
}

// AdvisoryRefresh is what reading the advisory feeds did to the snapshot.
type AdvisoryRefresh struct {
	// Path is the snapshot file; Before the snapshot read from it, After the refreshed one
	// (Before when a feed failed or nothing changed).
	Path          string
	Before, After *advisory.Snapshot
	Changes       []advisory.Change
	// Failed are the feeds that could not be read: then nothing is written, and the
	// updates are classified by Before.
	Failed []FeedFailure
	// Written: After was written to Path (Run.Write and Changes).
	Written  bool
	WriteErr error
}

// Changed reports whether the refresh found a difference (written or, without --write, to
// be written).
func (a *AdvisoryRefresh) Changed() bool { return a != nil && len(a.Changes) > 0 }

// feedFix is the fix a feed failure's message ends with.
func feedFix(flag string) string {
	return "the snapshot and the lock's other updates are unaffected; check the feed at that URL (" + flag + " names it), or if upstream changed its format, teach pipeline/advisory's reader and refresh the snapshot in a reviewed change; the next scheduled run reads it again"
}

// refreshAdvisories reads each feed and merges it into snap. Any feed that fails leaves the
// whole snapshot as it is: a refresh is reviewed as one change, and a snapshot half from
// today and half from before would say less than either.
func (r *Run) refreshAdvisories(ctx context.Context, c *client, path string, snap *advisory.Snapshot, today string) *AdvisoryRefresh {
	out := &AdvisoryRefresh{Path: path, Before: snap, After: snap}
	nginxURL, opensslURL := orDefault(r.NginxAdvisories, DefaultNginxAdvisories), orDefault(r.OpenSSLAdvisories, DefaultOpenSSLAdvisories)
	next := snap
	var changes []advisory.Change
	for _, f := range []struct {
		component, url, flag string
		read                 func(context.Context, string, string) ([]advisory.Advisory, string, error)
	}{
		{"nginx", nginxURL, "--nginx-advisories", c.nginxAdvisories},
		{"openssl", opensslURL, "--openssl-advisories", c.opensslAdvisories},
	} {
		fresh, source, err := f.read(ctx, f.url, today)
		if err == nil {
			var ch []advisory.Change
			next, ch, err = merge(next, f.component, fresh, advisory.Feed{URL: f.url, Checked: today, Source: source})
			changes = append(changes, ch...)
		}
		if err != nil {
			out.Failed = append(out.Failed, FeedFailure{Component: f.component, URL: f.url, Err: deadlineHint(ctx, err), Fix: feedFix(f.flag)})
		}
	}
	if len(out.Failed) == 0 {
		out.After, out.Changes = next, changes
	}
	return out
}

// merge is Snapshot.Merge, a merged snapshot that does not validate being an error of the
// feed that brought it.
func merge(s *advisory.Snapshot, component string, fresh []advisory.Advisory, feed advisory.Feed) (*advisory.Snapshot, []advisory.Change, error) {
	next, ch, err := s.Merge(component, fresh, feed)
	if err != nil {
		return s, nil, fmt.Errorf("merging into the snapshot: %w", err)
	}
	return next, ch, nil
}

// write writes After to Path when it changed.
func (a *AdvisoryRefresh) write() {
	if !a.Changed() || len(a.Failed) > 0 {
		return
	}
	data, err := a.After.Write()
	if err == nil {
		err = safeio.ReplaceFile(a.Path, data, 0o644)
	}
	if err != nil {
		a.WriteErr = fmt.Errorf("writing the refreshed advisories snapshot %s (it is unchanged): %w", a.Path, err)
		return
	}
	a.Written = true
}

// nginxAdvisories reads nginx.org's security_advisories.xml at u.
func (c *client) nginxAdvisories(ctx context.Context, u, today string) ([]advisory.Advisory, string, error) {
	body, err := c.feedGet(ctx, u, advisory.MaxNginxFeed, false)
	if err != nil {
		return nil, "", err
	}
	source := "nginx/nginx.org xml/en/security_advisories.xml read " + today
	as, err := advisory.ParseNginx(body, source)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", u, err)
	}
	return as, source, nil
}

// opensslAdvisories reads the listing at u (GitHub's contents API for OpenSSL's secjson/)
// and each record it names of 2024 or later.
func (c *client) opensslAdvisories(ctx context.Context, u, today string) ([]advisory.Advisory, string, error) {
	body, err := c.feedGet(ctx, u, advisory.MaxOpenSSLListing, true)
	if err != nil {
		return nil, "", err
	}
	entries, err := advisory.ParseOpenSSLListing(body)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", u, err)
	}
	var out []advisory.Advisory
	var total int64
	for _, e := range entries {
		rec, err := c.feedGet(ctx, e.DownloadURL, advisory.MaxOpenSSLRecord, false)
		if err != nil {
			return nil, "", fmt.Errorf("record %s: %w", e.Name, err)
		}
		if total += int64(len(rec)); total > advisory.MaxOpenSSLRecordsTotal {
			return nil, "", fmt.Errorf("the records listed sent more than %d bytes together, the bound for this feed", advisory.MaxOpenSSLRecordsTotal)
		}
		src := "openssl/release-metadata secjson/" + e.Name + " blob " + shortSHA(e.SHA) + " read " + today
		a, keep, err := advisory.ParseOpenSSLRecord(rec, src)
		if err != nil {
			return nil, "", fmt.Errorf("record %s (%s): %w", e.Name, e.DownloadURL, err)
		}
		if keep {
			out = append(out, a)
		}
	}
	return out, fmt.Sprintf("openssl/release-metadata secjson/ (%d records of %d or later) read %s", len(entries), 2024, today), nil
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// feedGet GETs u and reads at most limit bytes of the answer (more is a *source.SizeError,
// never a truncated feed). Under the run's deadline like every other request; api sends the
// GitHub token when u is on the GitHub API's origin (the OpenSSL listing), never elsewhere.
// No retry: a feed that fails is reported and read again by the next scheduled run, and a
// retry would spend the deadline the lock's updates share.
func (c *client) feedGet(ctx context.Context, u string, limit int64, api bool) ([]byte, error) {
	pu, err := url.Parse(u)
	if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", u)
	}
	c.sink.Send(progress.Detailf("GET %s", pu.Redacted()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", userAgent)
	hc := c.http
	if base, err := url.Parse(c.githubAPI); api && err == nil && c.token != "" && sameOrigin(pu, base) {
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("Authorization", "Bearer "+c.token)
		hc = c.tokenSafe(pu)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > limit {
		resp.Body.Close()
		return nil, &source.SizeError{URL: pu.Redacted(), Limit: limit, Size: resp.ContentLength}
	}
	body, err := readBody(resp, pu.Redacted(), limit)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		if api {
			return nil, ghError("GET "+pu.Redacted(), resp, []byte(safeio.Redact(string(body), c.token)), c.token != "")
		}
		return nil, &netfail.HTTPStatusError{What: "GET " + strconv.Quote(pu.Redacted()), Code: resp.StatusCode}
	}
	return body, nil
}

// snapshotPath is the file the run's snapshot is read from and a refresh written to; ""
// when the run uses the copy built into the program (no checkout): a refresh is then shown,
// never written.
func snapshotPath(p string) string {
	if p == "" {
		p = advisory.DefaultPath
	}
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) && p == advisory.DefaultPath {
		return ""
	}
	return p
}

// today is the date a refresh records (UTC), a variable for tests.
var today = func() string { return time.Now().UTC().Format("2006-01-02") }

// AdvisoriesBody is the pull request body's section for the refresh: each advisory added,
// changed or removed in the snapshot, for review, and each feed that could not be read; ""
// when there is neither.
func AdvisoriesBody(a *AdvisoryRefresh) string {
	if a == nil || (!a.Written && len(a.Failed) == 0 && a.WriteErr == nil) {
		return ""
	}
	var b strings.Builder
	if a.Written {
		fmt.Fprintf(&b, "## Advisories snapshot refreshed\n\nThe advisory feeds state these differently from the reviewed snapshot `%s` (read by `ci build` and by this update): review each before merging.\n\n| change | component | advisory | severity | fixed | summary |\n|---|---|---|---|---|---|\n", a.Path)
		for _, c := range a.Changes {
			what := c.Kind
			if len(c.What) > 0 {
				what += " (" + strings.Join(c.What, ", ") + ")"
			}
			fmt.Fprintf(&b, "| %s | %s | [%s](%s) | %s | %s | %s |\n", what, c.Advisory.Component, c.Advisory.ID, c.Advisory.URL, c.Advisory.EffectiveSeverity(), strings.Join(c.Advisory.Fixed, ", "), c.Advisory.Summary)
		}
		b.WriteString("\n")
	}
	if len(a.Failed) > 0 || a.WriteErr != nil {
		b.WriteString("## Advisories snapshot not refreshed\n\n")
		for _, f := range a.Failed {
			fmt.Fprintf(&b, "- %v; to resolve: %s\n", f, f.Fix)
		}
		if a.WriteErr != nil {
			fmt.Fprintf(&b, "- %v\n", a.WriteErr)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Counts is the changes in a few words: "2 added, 1 changed".
func (a *AdvisoryRefresh) Counts() string {
	n := map[string]int{}
	for _, c := range a.Changes {
		n[c.Kind]++
	}
	var out []string
	for _, k := range []string{"added", "changed", "removed"} {
		if n[k] > 0 {
			out = append(out, fmt.Sprintf("%d %s", n[k], k))
		}
	}
	return strings.Join(out, ", ")
}
