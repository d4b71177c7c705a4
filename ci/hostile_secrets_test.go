package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nginx-forge/nginx-forge/pipeline/progress"
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

// Issue 29: one redaction rule for everything printed. The -v log's sink (the renderer
// every command's library output goes through) redacts the run's credentials (the GitHub
// token, the Docker config's) and any credential a line carries, whatever the record says.
func TestLogRedactsAtTheSink(t *testing.T) {
	const token = "ghs_logSinkTestToken0123456789"
	const user, password = "robot", "s3cr3t-log-pa55"
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfg, "config.json"), []byte(`{"auths":{"r.example":{"auth":"`+basic+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", cfg)
	t.Setenv("GITHUB_TOKEN", token)
	var buf bytes.Buffer
	log, closeGroups := newLog(&buf, true, true)
	log.Send(progress.Note{Level: progress.Detail, Text: "GET https://u:url-pa55word@mirror.example/x with " + token})
	log.Send(progress.Note{Level: progress.Info, Text: "registry said: credentials Basic " + basic + " (" + password + ") rejected"})
	log.Send(progress.StepStarted{Step: "push to https://u:step-pa55word@r.example"})
	closeGroups()
	out := buf.String()
	for _, s := range []string{token, basic, password, "url-pa55word", "step-pa55word"} {
		if strings.Contains(out, s) {
			t.Errorf("the log holds %q:\n%s", s, out)
		}
	}
	for _, w := range []string{"GET https://u:xxxxx@mirror.example/x with xxxxx", "rejected", "::group::push to https://u:xxxxx@r.example"} {
		if !strings.Contains(out, w) {
			t.Errorf("the log lacks %q:\n%s", w, out)
		}
	}
}
