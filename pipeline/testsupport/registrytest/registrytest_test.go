//go:build integration

package registrytest

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func get(t *testing.T, url string) (int, error) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// The registry answers, stops (refusing connections), and comes back on the same
// address with the same storage.
func TestStartStopRestart(t *testing.T) {
	r := Start(t)
	if !strings.HasPrefix(r.Host, "127.0.0.1:") {
		t.Fatalf("host %q is not loopback", r.Host)
	}
	if code, err := get(t, "http://"+r.Host+"/v2/"); err != nil || code != 200 {
		t.Fatalf("/v2/: %d %v", code, err)
	}
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := get(t, "http://"+r.Host+"/v2/"); err == nil {
		t.Fatal("stopped registry still answers")
	}
	if err := r.Restart(); err != nil {
		t.Fatal(err)
	}
	if code, err := get(t, "http://"+r.Host+"/v2/"); err != nil || code != 200 {
		t.Fatalf("/v2/ after restart: %d %v", code, err)
	}
	cfg, _ := os.ReadFile(r.config)
	if !strings.Contains(string(cfg), filepath.Dir(r.config)) || !strings.Contains(string(cfg), "enabled: true") {
		t.Errorf("config does not use the test's storage or enable deletes:\n%s", cfg)
	}
}

// The proxy passes, answers 500 and resets, as its rule says.
func TestProxyFaults(t *testing.T) {
	r := Start(t)
	p := NewProxy(t, r.Host)
	url := "http://" + p.Host + "/v2/"
	if code, err := get(t, url); err != nil || code != 200 {
		t.Fatalf("pass: %d %v", code, err)
	}
	p.SetRule(FailFrom(1, 1, Fail500, nil))
	if code, _ := get(t, url); code != 500 {
		t.Errorf("fail500: got %d", code)
	}
	if code, _ := get(t, url); code != 200 {
		t.Errorf("after the single fault: got %d", code)
	}
	p.SetRule(FailFrom(1, -1, Reset, nil))
	if _, err := get(t, url); err == nil {
		t.Error("reset: request succeeded")
	}
	if got := strings.Join(p.Log(), ","); got != "pass GET /v2/,500 GET /v2/,pass GET /v2/,reset GET /v2/" {
		t.Errorf("proxy log %s", got)
	}
}

// WithBasicAuth: without credentials, or with wrong ones, the registry answers 401 with a
// Basic challenge; with them, 200; DockerConfig holds exactly them, for the registry's host.
func TestBasicAuth(t *testing.T) {
	r := Start(t, WithBasicAuth("robot", "pa55-word"))
	try := func(user, pass string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+r.Host+"/v2/", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, c := range [][2]string{{"", ""}, {"robot", "wrong"}, {"other", "pa55-word"}} {
		resp := try(c[0], c[1])
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic realm=") {
			t.Errorf("credentials %q: %d, WWW-Authenticate %q; want 401 with a Basic challenge", c, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	if resp := try("robot", "pa55-word"); resp.StatusCode != http.StatusOK {
		t.Errorf("right credentials: %d", resp.StatusCode)
	}
	if err := r.Restart(); err != nil {
		t.Fatalf("restart with auth: %v", err)
	}
	cfg, err := os.ReadFile(filepath.Join(r.DockerConfig(t), "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	// base64("robot:pa55-word")
	if want := `{"auths":{"` + r.Host + `":{"auth":"cm9ib3Q6cGE1NS13b3Jk"}}}`; string(cfg) != want {
		t.Errorf("config.json %s, want %s", cfg, want)
	}
	if cfg, _ := os.ReadFile(filepath.Join(Start(t).DockerConfig(t), "config.json")); string(cfg) != `{"auths":{}}` {
		t.Errorf("config.json without auth: %s", cfg)
	}
}
