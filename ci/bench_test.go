package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/bench"
	"github.com/nginx-forge/nginx-forge/pipeline/testenv"
)

func benchTool(t *testing.T, cmd, pkg string) string { return testenv.Tool(t, cmd, pkg) }

func TestBenchHelpDocumentsScenarios(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"bench", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("bench --help exited %d: %s", code, errb.String())
	}
	for _, s := range bench.Scenarios {
		if !strings.Contains(out.String(), s.Name) || !strings.Contains(out.String(), s.Description) {
			t.Errorf("bench --help does not document scenario %s", s.Name)
		}
	}
}

func TestBenchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"bench"}, // nothing to measure
		{"bench", "--nginx", "/usr/sbin/nginx", "--tree", "/tmp"},
		{"bench", "--tree", t.TempDir()},
		{"bench", "--nginx", "/usr/sbin/nginx", "--scenarios", "tls-handshake,http3"},
		{"bench", "--nginx", "/usr/sbin/nginx", "--duration", "1500ms"},
		{"bench", "--nginx", "/usr/sbin/nginx", "--rounds", "0"},
		{"tune", "--nginx", "/usr/sbin/nginx", "--config", "/nonexistent/nginx.conf"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q exited %d, want 2 (usage): %s", args, code, errb.String())
		}
	}
}

// TestBenchCommand runs `ci bench` for real, Debian's nginx as both servers, one short
// scenario, and reads the JSON it writes.
func TestBenchCommand(t *testing.T) {
	benchTool(t, "wrk", "wrk")
	benchTool(t, "taskset", "util-linux")
	nginx := benchTool(t, "nginx", "nginx")
	js := filepath.Join(t.TempDir(), "bench.json")
	md := filepath.Join(t.TempDir(), "bench.md")
	var out bytes.Buffer
	var errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--nginx", nginx, "--baseline", nginx,
		"--scenarios", "http-keepalive", "--duration", "1s", "--rounds", "2", "--warmup", "0",
		"--json", js, "--markdown", md}, &out, &errb)
	if code != 0 {
		t.Fatalf("ci bench exited %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "http-keepalive") || !strings.Contains(out.String(), "ratios to baseline") {
		t.Errorf("table:\n%s", out.String())
	}
	var rep bench.Report
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Scenarios) != 1 || len(rep.Scenarios[0].Results) != 2 || rep.Scenarios[0].Ratios[0].RequestsSec.N != 2 {
		t.Errorf("JSON report: %+v", rep.Scenarios)
	}
	if m, _ := os.ReadFile(md); !bytes.Contains(m, []byte("| http-keepalive | built |")) {
		t.Errorf("Markdown:\n%s", m)
	}
}
