package forge_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// TestHostEngineOnePlatform: the host engine's one-platform rule is the request's, applied
// where it is resolved (not by the command); a request resolved for one engine is refused by
// Run on another before anything runs.
func TestHostEngineOnePlatform(t *testing.T) {
	w := newWorld(t)
	both, err := plan.ParsePlatforms("linux/amd64,linux/arm64")
	if err != nil {
		t.Fatal(err)
	}
	req := w.request(t.TempDir())
	req.Output, req.Platforms, req.Engine = "", both, engine.Host
	if _, err := req.Resolve(); err == nil || !errors.As(err, new(*forge.RequestError)) ||
		!strings.Contains(err.Error(), "--platform linux/amd64,linux/arm64: the host engine builds for this machine only") {
		t.Errorf("host engine, two platforms: err = %v, want a *forge.RequestError naming the rule", err)
	}
	req.Engine = engine.Dagger
	if _, err := req.Resolve(); err != nil {
		t.Errorf("dagger engine, two platforms: %v", err)
	}

	req = w.request(t.TempDir())
	req.Engine = engine.Dagger
	_, err = runBuild(&fakeEngine{j: w.j}, req)
	if err == nil || !errors.As(err, new(*forge.RequestError)) || !strings.Contains(err.Error(), "resolved for the dagger engine, not fake") {
		t.Errorf("resolved for dagger, run on fake: err = %v, want a *forge.RequestError", err)
	}
	if got := w.j.list(); len(got) != 0 {
		t.Errorf("the engine was used before the refusal: %q", got)
	}
}
