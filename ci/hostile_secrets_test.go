package main

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 29: text a server echoes back (a registry quoting the Basic credentials it was sent)
// was printed as it came. Every command's error goes through the one redaction rule.
func TestEchoedRegistryCredentialsAreRedacted(t *testing.T) {
	const user, password = "robot", "s3cr3t-registry-pa55"
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v2/" && r.Header.Get("Authorization") == "" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"errors":[{"code":"UNAUTHORIZED","message":"credentials %s (%s) rejected, password %s"}]}`,
			r.Header.Get("Authorization"), basic, password)
	}))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	cfg := t.TempDir()
	auth := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, basic)
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(auth), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfg)
	t.Setenv("GITHUB_TOKEN", "")
	digest := "sha256:" + strings.Repeat("a", 64)
	_, stdout, stderr := runWithin(t, 30*time.Second, "manifest", "--image", host+"/nginx:test", "--dry-run", "--timeout", "10s", host+"/nginx@"+digest)
	if !strings.Contains(stderr, "UNAUTHORIZED") && !strings.Contains(stderr, "401") {
		t.Errorf("the registry's refusal is not reported:\n%s", stderr)
	}
	for _, s := range []string{basic, password} {
		if strings.Contains(stdout+stderr, s) {
			t.Errorf("printed a credential %q:\n%s%s", s, stdout, stderr)
		}
	}
	t.Logf("stderr: %s", stderr)
}
