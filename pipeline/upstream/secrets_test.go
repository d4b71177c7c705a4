package upstream_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

const testToken = "ghp_hostileTestToken0123456789"

// Issue 29: the GitHub token followed a redirect to another port of the same host (net/http
// keeps Authorization for the same host name). It reaches only the API's own origin: scheme,
// host and port.
func TestTokenNeverFollowsARedirectToAnotherOrigin(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]string{} // server -> Authorization it got
	record := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen[name] = r.Header.Get("Authorization")
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`[]`))
		}
	}
	other := httptest.NewServer(record("other port")) // same host 127.0.0.1, another port
	defer other.Close()
	var api *httptest.Server
	api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("hop") == "" {
			// First a redirect within the API's origin: the token goes along.
			http.Redirect(w, r, api.URL+r.URL.Path+"?hop=1&"+r.URL.RawQuery, http.StatusFound)
			return
		}
		mu.Lock()
		seen["api"] = r.Header.Get("Authorization")
		mu.Unlock()
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusFound)
	}))
	defer api.Close()
	c := upstream.NewClient(upstream.WithGitHubAPI(api.URL), upstream.WithToken(testToken), upstream.WithRetries(0, time.Millisecond),
		upstream.WithHTTPClient(&http.Client{Timeout: 10 * time.Second}))
	if _, err := c.GitHubReleases(context.Background(), lock.OpenSSL); err != nil {
		t.Logf("GitHubReleases: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["api"] != "Bearer "+testToken {
		t.Errorf("the API's own redirect lost the token: %q", seen["api"])
	}
	if a, ok := seen["other port"]; !ok || a != "" {
		t.Errorf("the other port got Authorization %q (reached: %v)", a, ok)
	}
}

// A server that echoes the token (a 401 body quoting it, or a Basic credential) is quoted
// only redacted.
func TestServerEchoedCredentialsAreRedacted(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("x-access-token:" + testToken))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"message":"Bad credentials: ` + r.Header.Get("Authorization") + ` (also Basic ` + basic + `)"}`))
	}))
	defer api.Close()
	c := upstream.NewClient(upstream.WithGitHubAPI(api.URL), upstream.WithToken(testToken), upstream.WithRetries(0, time.Millisecond))
	_, err := c.GitHubReleases(context.Background(), lock.OpenSSL)
	if err == nil {
		t.Fatal("a 401 passed")
	}
	for _, s := range []string{testToken, basic} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("the error quotes a credential: %v", err)
		}
	}
	if !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "Bad credentials") {
		t.Errorf("the error lost what the server said: %v", err)
	}
}
