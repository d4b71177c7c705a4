//go:build integration

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
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

func benchTool(t *testing.T, cmd, pkg string) string { return testenv.Tool(t, cmd, pkg) }

// TestBenchCommand runs `ci bench` for real, Debian's nginx as both servers, one short
// scenario, and reads the JSON it writes.
func TestBenchCommand(t *testing.T) {
	benchTool(t, "wrk", "wrk")
	benchTool(t, "taskset", "util-linux")
	nginx := benchTool(t, "nginx", "nginx")
	testenv.Tool(t, "strace", "strace")
	js := filepath.Join(t.TempDir(), "bench.json")
	md := filepath.Join(t.TempDir(), "bench.md")
	// The shipped config alone: its compression.d include needs brotli and zstd modules,
	// which Debian's nginx lacks.
	shipped, err := os.ReadFile(findUp(shippedConfig))
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "nginx.conf")
	if err := os.WriteFile(conf, shipped, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var errb bytes.Buffer
	code := run(context.Background(), []string{"bench", "--nginx", nginx, "--baseline", nginx,
		"--scenarios", "http-keepalive", "--duration", "1s", "--rounds", "2", "--warmup", "0", "--syscall-requests", "100",
		"--oob-config", conf, "--json", js, "--markdown", md}, &out, &errb)
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
	// Beside the like-for-like figures: syscalls and memory, and the out-of-box section with
	// the shipped config against Debian's default.
	if s := rep.Scenarios[0]; len(s.Syscalls) != 2 || s.Syscalls[0].Requests != 100 || rep.Targets[0].Memory == nil {
		t.Errorf("like-for-like syscalls %+v, memory %+v", s.Syscalls, rep.Targets[0].Memory)
	}
	oob := rep.OutOfBox
	if oob == nil || oob.Mode != bench.ModeOutOfBox || len(oob.Scenarios) != 1 || len(oob.Scenarios[0].Syscalls) != 2 {
		t.Fatalf("out-of-box report: %+v", oob)
	}
	if p := oob.Targets[1].Profile; p == nil || !strings.Contains(p.Name, "Debian") || oob.Targets[0].Profile == nil || oob.Targets[0].Memory == nil {
		t.Errorf("out-of-box targets: %+v", oob.Targets)
	}
	for _, want := range []string{"out of the box", "syscalls/request", "peak RSS per worker"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	if m, _ := os.ReadFile(md); !bytes.Contains(m, []byte("#### Out of the box")) || !bytes.Contains(m, []byte("| syscalls/request |")) {
		t.Errorf("Markdown:\n%s", m)
	}
}
