package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestEngineNameIsJudgedOnceWhenParsed: every command that takes --engine refuses an unknown
// engine while its flags are parsed (exit 2, the flag and the names it takes), before any
// other flag is judged or anything is read; a known name gets past the parse.
func TestEngineNameIsJudgedOnceWhenParsed(t *testing.T) {
	for _, args := range [][]string{
		{"build", "--engine", "docker", "--no-smoke", "--output", "/nonexistent/never.tar"},
		{"smoke", "--engine", "docker", "--image", "127.0.0.1:9/never:1"},
		{"pgo-profile", "--engine", "docker"},
	} {
		var sout, serr bytes.Buffer
		code := run(context.Background(), args, &sout, &serr)
		want := `invalid value "docker" for flag -engine: use dagger or host`
		if code != 2 || !strings.Contains(serr.String(), want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", args, code, serr.String(), want)
		}
	}
	// The chooser refuses what the flag would not take, should a caller build the config itself.
	if _, err := newEngine(engineConfig{name: "docker"}); err == nil || !strings.Contains(err.Error(), "use dagger or host") {
		t.Errorf("newEngine(docker) = %v", err)
	}
	var n engineName
	for _, ok := range []string{"host", "dagger"} {
		if err := n.Set(ok); err != nil || string(n) != ok {
			t.Errorf("Set(%q) = %v, value %q", ok, err, n)
		}
	}
}
