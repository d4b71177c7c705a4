package bench

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestParseKnobs(t *testing.T) {
	conf := `
# comment; worker_processes 99;
worker_processes 4;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
http {
    sendfile off; tcp_nopush on;
    keepalive_requests 5000;
    keepalive_timeout 30s 25s;
    open_file_cache max=2000 inactive=20s;
    open_file_cache_valid 60s;
    ssl_session_cache shared:SSL:50m;
    ssl_session_tickets off;
    gzip_comp_level 5;
}
`
	k, err := ParseKnobs(strings.NewReader(conf))
	if err != nil {
		t.Fatal(err)
	}
	want := Knobs{WorkerProcesses: "4", WorkerConnections: 16384, WorkerRlimitNofile: 65536,
		OpenFileCache: "max=2000 inactive=20s", OpenFileCacheValid: "60s", KeepaliveRequests: 5000,
		KeepaliveTimeout: "30s 25s", SSLSessionCache: "shared:SSL:50m", SSLSessionTickets: false,
		Sendfile: false, TCPNopush: true, GzipCompLevel: 5}
	if k != want {
		t.Errorf("ParseKnobs =\n%+v\nwant\n%+v", k, want)
	}
	// Unset knobs keep nginx's defaults.
	k, err = ParseKnobs(strings.NewReader("events {}\n"))
	if err != nil || k != DefaultKnobs() {
		t.Errorf("ParseKnobs(empty) = %+v, %v; want the defaults", k, err)
	}
	for _, bad := range []string{"worker_connections many;", "sendfile yes;", "worker_processes -1;"} {
		if _, err := ParseKnobs(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), "line 1") {
			t.Errorf("ParseKnobs(%q) = %v, want an error naming line 1", bad, err)
		}
	}
}

// TestParseShippedConfig reads the config the image ships (the tuning sweep's baseline).
func TestParseShippedConfig(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "plan", "files", "nginx.conf"))
	if err != nil {
		t.Skipf("skipped: no shipped nginx.conf yet: %v", err)
	}
	defer f.Close()
	k, err := ParseKnobs(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Validate(); err != nil {
		t.Errorf("the shipped config's knobs are not valid: %v", err)
	}
}

func TestRenderGolden(t *testing.T) {
	c := Config{Knobs: DefaultKnobs(), Prefix: "/tmp/bench/server0", Content: "/tmp/bench/content",
		HTTPPort: 18080, HTTPSPort: 18443, FullHandshakePort: 18444, User: "nobody", Group: "nogroup",
		TempPaths: []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"}}
	c.OpenFileCache, c.OpenFileCacheValid, c.WorkerRlimitNofile = "max=1024 inactive=10s", "120s", 8192
	got, err := c.Render()
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "nginx.conf.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./pipeline/bench -run TestRenderGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("rendered config differs from %s (rerun with -update if intended):\n%s", golden, got)
	}
	bad := c
	bad.GzipCompLevel = 10
	if _, err := bad.Render(); err == nil || !strings.Contains(err.Error(), "gzip_comp_level") {
		t.Errorf("Render with gzip_comp_level 10: %v", err)
	}
}

func TestSelectScenarios(t *testing.T) {
	all, err := SelectScenarios("")
	if err != nil || len(all) != len(Scenarios) {
		t.Fatalf("SelectScenarios(\"\") = %d, %v", len(all), err)
	}
	two, err := SelectScenarios("gzip, tls-handshake,gzip")
	if err != nil || len(two) != 2 || two[0].Name != "gzip" || two[1].Name != "tls-handshake" {
		t.Errorf("SelectScenarios = %v, %v", two, err)
	}
	if _, err := SelectScenarios("tls-handshake,quic"); err == nil || !strings.Contains(err.Error(), `"quic"`) || !strings.Contains(err.Error(), "tls-keepalive") {
		t.Errorf("SelectScenarios(unknown) = %v", err)
	}
}

func TestParseCPUList(t *testing.T) {
	got, err := parseCPUList("0-2,5,7-8")
	if err != nil || len(got) != 6 || got[3] != 5 || got[5] != 8 {
		t.Errorf("parseCPUList = %v, %v", got, err)
	}
	if _, err := parseCPUList("a-b"); err == nil {
		t.Error("parseCPUList accepted garbage")
	}
}
