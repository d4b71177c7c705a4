package daggerexec

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestModuleRoot: the client's source is the checkout ci runs in, found from any directory
// of it; outside one (another module, or none) the smoke test fails naming the fix, in the
// preflight, before any engine is contacted.
func TestModuleRoot(t *testing.T) {
	root := testenv.RepoRoot()
	t.Chdir(filepath.Join(root, "pipeline", "engine"))
	if got, err := moduleRoot(); err != nil || got != root {
		t.Errorf("moduleRoot from pipeline/engine = %q, %v; want %q", got, err, root)
	}
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "go.mod"), []byte("module example.com/other\n\ngo 1.26\n"), 0o644)
	os.MkdirAll(filepath.Join(other, "sub"), 0o755)
	t.Chdir(filepath.Join(other, "sub"))
	_, err := moduleRoot()
	if err == nil || !strings.Contains(err.Error(), plan.SmokeClientModule) || !strings.Contains(err.Error(), "run ci from the nginx-forge checkout") {
		t.Errorf("moduleRoot outside the checkout: %v", err)
	}
	noEngineEnv(t, t.TempDir())
	if err := New().Preflight(context.Background(), true); err == nil || !strings.Contains(err.Error(), "run ci from the nginx-forge checkout") {
		t.Errorf("Preflight of a smoke test outside the checkout: %v, want the checkout named", err)
	}
	for gomod, want := range map[string]string{
		"module github.com/nginx-forge/nginx-forge\n": plan.SmokeClientModule,
		"// x\nmodule \"example.com/q\" // c\n":       "example.com/q",
		"modulex foo\n":                               "",
	} {
		if got := modulePath([]byte(gomod)); got != want {
			t.Errorf("modulePath(%q) = %q, want %q", gomod, got, want)
		}
	}
}
