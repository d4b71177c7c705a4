package bundle

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const sampleConf = `worker_processes auto;
worker_rlimit_nofile 65536;
events { worker_connections 16384; }
`

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test ./pipeline/bundle -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s drifted (rerun with -update if intended):\n%s", p, got)
	}
}

func TestGolden(t *testing.T) {
	unit, err := renderUnit([]byte(sampleConf), makeOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "nginx-forge.service", unit)
	golden(t, "sysctl.conf", sysctlConf())
	golden(t, "sysusers.conf", sysusersEntry(makeOptions(nil)))
}

func TestNofileLimit(t *testing.T) {
	for conf, want := range map[string]int{
		sampleConf: 65536,
		"events {\n    worker_connections 4096;\n}\n": 8192,
		"events { }\n": 1024,
		"# worker_rlimit_nofile 9;\nworker_rlimit_nofile 2048;\n": 2048,
	} {
		got, err := nofileLimit([]byte(conf))
		if err != nil || got != want {
			t.Errorf("NofileLimit(%q) = %d, %v; want %d", conf, got, err, want)
		}
	}
	if _, err := nofileLimit([]byte("worker_rlimit_nofile lots;")); err == nil || !strings.Contains(err.Error(), "worker_rlimit_nofile") {
		t.Errorf("NofileLimit(bad) = %v", err)
	}
	unit, err := renderUnit([]byte(sampleConf), makeOptions(nil))
	if err != nil || !bytes.Contains(unit, []byte("\nLimitNOFILE=65536\n")) {
		t.Errorf("unit does not carry the config's worker_rlimit_nofile: %v\n%s", err, unit)
	}
}

func TestUnitRejectsBadOptions(t *testing.T) {
	for _, opt := range []Option{
		withName("Nginx Forge"),
		withPaths("usr/sbin/nginx", "/etc/nginx/nginx.conf"),
		withPaths("/usr/sbin/nginx", "/etc/nginx/my nginx.conf"),
		withPaths("/opt/$HOME/nginx", "/etc/nginx/nginx.conf"),
	} {
		o := makeOptions([]Option{opt})
		if _, err := Write(t.TempDir(), []byte(sampleConf), opt); err == nil {
			t.Errorf("Write with %+v accepted", o)
		}
	}
	// The same layout, each default kept, is accepted: the refusals above are the options'.
	if _, err := Write(t.TempDir(), []byte(sampleConf)); err != nil {
		t.Errorf("Write with the defaults: %v", err)
	}
}
