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
