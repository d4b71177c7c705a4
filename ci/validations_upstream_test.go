package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/upstreamtest"
)

// Issue 35: a GitHub API (or nginx.org) that redirects in a circle is named as a redirect
// loop, is not called transient, and is not retried (each URL asked once); a chain of
// redirects past net/http's 10 is named too.
func TestCheckUpdatesNamesARedirectLoop(t *testing.T) {
	notInActions(t)
	for _, c := range []struct {
		name   string
		target func(r *http.Request) string
		want   string
	}{
		{"back to itself", func(r *http.Request) string { return r.URL.RequestURI() }, "redirect loop: "},
		{"a chain of new URLs", func(r *http.Request) string { return r.URL.Path + "x" }, "too many redirects: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			asked := map[string]int{}
			loop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				asked[r.URL.Path]++
				mu.Unlock()
				http.Redirect(w, r, c.target(r), http.StatusFound)
			}))
			t.Cleanup(loop.Close)
			s := upstreamtest.NewScenario(t)
			start := time.Now()
			code, out, errs := runCheckUpdates(t, s, "--skip-images", "--github-api", loop.URL, "--nginx-org", loop.URL)
			all := out + errs
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, all)
			}
			for _, w := range []string{c.want, "to resolve: not transient: the server's redirects go in a circle"} {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if strings.Contains(all, "to resolve: transient") || strings.Contains(all, "stopped after 10 redirects") {
				t.Errorf("the loop is called transient or not named:\n%s", all)
			}
			mu.Lock()
			defer mu.Unlock()
			if c.name == "back to itself" {
				for path, n := range asked {
					if n != 1 {
						t.Errorf("%s was asked %d times, want once (a loop is not retried)", path, n)
					}
				}
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("took %s: was the loop retried with backoff?", took)
			}
		})
	}
}

// Issue 35: a GitHub tag list that parses as JSON but is not GitHub's list (null, entries
// without a name) is refused as such, not worded as "lists no release tags" (nor, when the
// releases list is fine, silently ignored).
func TestCheckUpdatesRefusesATagListThatDoesNotParse(t *testing.T) {
	notInActions(t)
	for _, c := range []struct {
		name, body string
		want       []string
	}{
		{"null", `null`, []string{"listing /repos/openssl/openssl/tags: the response is null, not a JSON array"}},
		{"entries without a name", `[{"nom": "openssl-3.9.9"}]`, []string{`listing /repos/openssl/openssl/tags: entry 0 has no "name"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := upstreamtest.NewScenario(t)
			s.Upstream.SetGitHub("openssl/openssl", "tags", []byte(c.body))
			code, out, errs := runCheckUpdates(t, s, "--skip-images")
			all := out + errs
			if code != 1 {
				t.Errorf("exit %d, want 1\n%s", code, all)
			}
			for _, w := range append(c.want, "not GitHub's list: check --github-api", "to resolve: not transient: the answer is not GitHub's release or tag list") {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q:\n%s", w, all)
				}
			}
			if strings.Contains(all, "lists no release tags") {
				t.Errorf("a list that does not parse is worded as an empty one:\n%s", all)
			}
		})
	}
}

// Issue 35: upstream tags that spell one release two ways (zlib's v1.4 and v1.4.0) give the
// same update on every run, whatever order GitHub lists them in: 1.4.0, the fuller spelling.
func TestCheckUpdatesPicksOneSpellingOfARelease(t *testing.T) {
	notInActions(t)
	seen := map[string]int{}
	for _, order := range [][]string{{"v1.4", "v1.4.0"}, {"v1.4.0", "v1.4"}} {
		for range 10 {
			s := upstreamtest.NewScenario(t)
			s.Upstream.SetGitHub("madler/zlib", "releases", upstreamtest.ReleasesJSON("madler/zlib", append(order, "v1.3.1")...))
			s.Upstream.SetGitHub("madler/zlib", "tags", upstreamtest.TagsJSON("madler/zlib", append(order, "v1.3.1")...))
			_, out, errs := runCheckUpdates(t, s, "--skip-images")
			row := ""
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) >= 3 && f[0] == "zlib" && f[1] == "1.3.1" {
					row = f[2]
				}
			}
			if row == "" {
				t.Fatalf("no zlib row in the table:\n%s%s", out, errs)
			}
			seen[row]++
		}
	}
	if len(seen) != 1 || seen["1.4.0"] != 20 {
		t.Errorf("20 runs chose %v, want 1.4.0 every time", seen)
	}
}
