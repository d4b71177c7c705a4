package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/bench"
)

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
		{"bench", "--nginx", "/usr/sbin/nginx", "--mode", "out-of-box", "--scenarios", "gzip-equal-bytes"},
		{"tune", "--nginx", "/usr/sbin/nginx", "--config", "/nonexistent/nginx.conf"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 2 {
			t.Errorf("%q exited %d, want 2 (usage): %s", args, code, errb.String())
		}
	}
}

func TestBenchModes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"bench", "--nginx", "/usr/sbin/nginx", "--mode", "fast"}, &out, &errb); code != 2 {
		t.Errorf("--mode fast exited %d: %s", code, errb.String())
	}
	if code := run(context.Background(), []string{"bench", "--nginx", "/usr/sbin/nginx", "--oob-config", "/nonexistent.conf"}, &out, &errb); code != 2 {
		t.Errorf("--oob-config missing exited %d: %s", code, errb.String())
	}
}
