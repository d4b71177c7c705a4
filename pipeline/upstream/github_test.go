package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// recorded serves the GitHub API responses under testdata/github (see
// upstreamtest.ServeRecorded): the tags of nginx/nginx and openssl/openssl span two pages,
// linked with Link headers like GitHub's.
func recorded(t *testing.T) *upstreamtest.Server {
	t.Helper()
	s := upstreamtest.New(t)
	upstreamtest.ServeRecorded(t, s, "testdata")
	return s
}

func versions(vs []upstream.Version) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, " ")
}

func TestGitHubReleasesFromRecordedResponses(t *testing.T) {
	s := recorded(t)
	var logs strings.Builder
	const token = "ghp_testTOKENvalue1234567890"
	c := upstream.NewClient(upstream.WithGitHubAPI(s.GitHubAPI()), upstream.WithToken(token),
		upstream.WithSink(progress.SinkFunc(func(e progress.Event) { fmt.Fprintf(&logs, "%s\n", e.(progress.Note).Text) })))
	for _, tc := range []struct{ component, want string }{
		// release-0.1.0 is a real (ancient) tag; odd tags like before-1.0-branch are skipped;
		// 1.26.x patch releases exist only as tags on the second page.
		{lock.Nginx, "0.1.0 1.24.0 1.25.5 1.26.0 1.26.1 1.26.2 1.26.3 1.27.0 1.27.1 1.27.2 1.27.3 1.27.4 1.27.5 1.28.0 1.29.0 1.29.1"},
		// alpha/beta/rc tags, OpenSSL_1_1_1w-style tags, a draft, and 3.5.9 (tagged, but
		// its release is marked pre-release) are all left out.
		{lock.OpenSSL, "3.0.17 3.0.18 3.2.6 3.3.5 3.4.3 3.5.2 3.5.3 3.5.4 3.6.0"},
		{lock.PCRE2, "10.10 10.43 10.44 10.45 10.46"},
		{lock.Zlib, "1.2.9 1.2.12 1.2.13 1.3 1.3.1"},
		{lock.Brotli, "1.0.7 1.0.9 1.1.0 1.2.0"},
		// Its only release is a release candidate, and a tag.
		{lock.NgxBrotli, "1.0.0rc"},
		{lock.Zstd, "1.5.4 1.5.5 1.5.6 1.5.7"},
		// Tags without a "v".
		{lock.ZstdNginxModule, "0.1.0 0.1.1"},
	} {
		got, err := c.GitHubReleases(context.Background(), tc.component)
		if err != nil {
			t.Fatalf("%s: %v", tc.component, err)
		}
		if versions(got) != tc.want {
			t.Errorf("%s releases:\n got %s\nwant %s", tc.component, versions(got), tc.want)
		}
	}
	var page2, authed, total int
	for _, r := range s.Requests() {
		total++
		// These publish their releases as tags: the release objects are not read.
		if strings.HasSuffix(r.Path, "/google/ngx_brotli/releases") || strings.HasSuffix(r.Path, "/tokers/zstd-nginx-module/releases") {
			t.Errorf("read the release objects of a tags-only repository: %s", r.Path)
		}
		if strings.Contains(r.RawQuery, "page=2") {
			page2++
		}
		if r.Authorization == "Bearer "+token {
			authed++
		}
	}
	if page2 != 2 {
		t.Errorf("followed %d page-2 links, want 2 (nginx and openssl tags)", page2)
	}
	// Releases and tags of six repositories, nginx's and OpenSSL's tags on two pages, and
	// only the tags of the two tags-only ones.
	if authed != total || total != 16 {
		t.Errorf("%d of %d requests carried the token; want all of 16", authed, total)
	}
	if strings.Contains(logs.String(), token) {
		t.Errorf("the token appears in the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "GET ") {
		t.Errorf("the logger saw no requests: %q", logs.String())
	}
}

func TestNginxOrgReleases(t *testing.T) {
	s := recorded(t)
	got, err := upstream.NewClient(upstream.WithNginxOrg(s.NginxOrg())).NginxOrgReleases(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := "1.24.0 1.26.3 1.28.0 1.29.1"; versions(got) != want {
		t.Errorf("nginx.org releases = %s, want %s", versions(got), want)
	}
	s.SetNginxOrg([]byte("<html>maintenance</html>"))
	if _, err := upstream.NewClient(upstream.WithNginxOrg(s.NginxOrg())).NginxOrgReleases(context.Background()); err == nil || !strings.Contains(err.Error(), "lists no nginx") {
		t.Errorf("a page without tarball links: err = %v, want one saying it lists no nginx tarball", err)
	}
}

func TestGitHubRateLimit(t *testing.T) {
	s := recorded(t)
	s.FailGitHub("openssl/openssl", http.StatusForbidden)
	_, err := upstream.NewClient(upstream.WithGitHubAPI(s.GitHubAPI())).GitHubReleases(context.Background(), lock.OpenSSL)
	if !errors.Is(err, upstream.ErrRateLimited) || !strings.Contains(err.Error(), "GITHUB_TOKEN") {
		t.Errorf("err = %v, want ErrRateLimited with a hint to set GITHUB_TOKEN", err)
	}
	// A 5xx is retried (twice here), then reported.
	s.FailGitHub("openssl/openssl", http.StatusBadGateway)
	n := len(s.Requests())
	_, err = upstream.NewClient(upstream.WithGitHubAPI(s.GitHubAPI()), upstream.WithRetries(2, time.Millisecond)).GitHubReleases(context.Background(), lock.OpenSSL)
	if err == nil || errors.Is(err, upstream.ErrRateLimited) || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("err = %v, want an HTTP 502 error", err)
	}
	if got := len(s.Requests()) - n; got != 3 {
		t.Errorf("made %d requests for a failing page, want 3 (one try and two retries)", got)
	}
}

// A Link header that points at another host must not be followed: the token would go with it.
func TestGitHubRefusesForeignNextLink(t *testing.T) {
	var sawToken bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" && r.Host != "" {
			sawToken = true
		}
		w.Header().Set("Link", `<https://evil.example/steal?page=2>; rel="next"`)
		w.Write([]byte(`[{"tag_name":"pcre2-10.46","draft":false,"prerelease":false}]`))
	}))
	defer srv.Close()
	_, err := upstream.NewClient(upstream.WithGitHubAPI(srv.URL), upstream.WithToken("secret-token")).GitHubReleases(context.Background(), lock.PCRE2)
	if err == nil || !strings.Contains(err.Error(), "leaves the API host") {
		t.Fatalf("err = %v, want a refusal to follow the link", err)
	}
	if !sawToken {
		t.Errorf("the API host itself did not get the token")
	}
}

func TestGitHubMalformedResponse(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"message":"not a list"}`))
	}))
	defer srv.Close()
	_, err := upstream.NewClient(upstream.WithGitHubAPI(srv.URL)).GitHubReleases(context.Background(), lock.Zlib)
	if err == nil || !strings.Contains(err.Error(), "/repos/madler/zlib/releases") {
		t.Errorf("err = %v, want a decoding error naming the endpoint", err)
	}
}
