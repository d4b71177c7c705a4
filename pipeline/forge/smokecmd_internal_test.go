package forge

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// countSmoke counts the smoke command's lock loads and plans until the test ends.
func countSmoke(t *testing.T) (loads, plans *int) {
	loads, plans = new(int), new(int)
	oldLoad, oldPlan := loadSmokeLock, newSmokePlan
	t.Cleanup(func() { loadSmokeLock, newSmokePlan = oldLoad, oldPlan })
	loadSmokeLock = func(path string) (*lock.Lock, error) { *loads++; return oldLoad(path) }
	newSmokePlan = func(l *lock.Lock, opts ...plan.Option) (*plan.Plan, error) { *plans++; return oldPlan(l, opts...) }
	return loads, plans
}

// TestSmokeResolvesOnce: `ci smoke --address` and `--image` resolve their request once: the
// expectation lock is loaded once, the module set mapped to configure flags without a plan,
// the CA read once, and only the image gets a plan (its own platform's), made once.
func TestSmokeResolvesOnce(t *testing.T) {
	twin := filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "testdata", "stack.twin.lock.json")

	loads, plans := countSmoke(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the suite itself is not what is counted
	rs, err := SmokeRequest{Address: "127.0.0.1:1", ExpectLock: twin, Modules: "-http_v3"}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	SmokeServer(ctx, rs, nil) // what the suite says of a closed port is not what is counted
	if *loads != 1 || *plans != 0 {
		t.Errorf("--address: %d lock loads and %d plans, want 1 and 0", *loads, *plans)
	}

	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf.OS, cf.Architecture = "linux", "arm64"
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img); err != nil {
		t.Fatal(err)
	}
	for _, expectLock := range []string{"", twin} {
		loads, plans := countSmoke(t)
		rs, err := SmokeRequest{Image: "oci:" + dir, ExpectLock: expectLock}.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		prep, err := PrepareImageSmoke(context.Background(), rs)
		if err != nil {
			t.Fatal(err)
		}
		if *loads != 1 || *plans != 1 {
			t.Errorf("--image (--expect-lock %q): %d lock loads and %d plans, want 1 and 1", expectLock, *loads, *plans)
		}
		if prep.Plan.Platform.Arch != "arm64" || prep.Options.Expect.Arch != "arm64" {
			t.Errorf("--image: plan for %s, expecting %s; want the image's own arm64", prep.Plan.Platform, prep.Options.Expect.Arch)
		}
	}
}
