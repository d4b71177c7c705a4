package forge_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// interrupting is the fake engine with a signal arriving while the image is assembled (the
// engine is asked for libcrypt's version there): the run's context ends.
type interrupting struct {
	*fakeEngine
	cancel context.CancelFunc
}

func (e *interrupting) PackageVersion(ctx context.Context, p *plan.Plan, pkg string) (string, error) {
	e.cancel()
	return e.fakeEngine.PackageVersion(ctx, p, pkg)
}

// Issue 47: a build interrupted while it assembled the image (SIGTERM ends the run's
// context; assembling takes none) still wrote --output. It ends with the interruption and
// writes nothing.
func TestInterruptedAssembleWritesNoOutput(t *testing.T) {
	w := newWorld(t)
	out := filepath.Join(t.TempDir(), "nginx.tar")
	rs, err := forge.Request{Lock: w.lock, Mirror: w.mirror, RuntimeImage: w.base, Output: out, NoSmoke: true, Advisories: w.advisories}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err = forge.Run(ctx, &interrupting{&fakeEngine{j: w.j}, cancel}, rs)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want the interruption", err)
	}
	noFile(t, out)
	noFile(t, out+".spdx.json")
}
