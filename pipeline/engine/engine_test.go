package engine_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/engine"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/progress"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/source"
)

// smallTarGz is a .tar.gz with one file.
func smallTarGz(t *testing.T, name, body string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}); err != nil {
		t.Fatal(err)
	}
	tw.Write([]byte(body))
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// recorder is an engine that only records whether Build reached it.
type recorder struct {
	built []string // the directories Build was given
}

func (r *recorder) Name() string                          { return "recorder" }
func (r *recorder) Preflight(context.Context, bool) error { return nil }
func (r *recorder) Builder(context.Context, *plan.Plan) (engine.Builder, error) {
	return engine.Builder{}, nil
}
func (r *recorder) PackageVersion(context.Context, *plan.Plan, string) (string, error) {
	return "", nil
}
func (r *recorder) Smoke(context.Context, *plan.Plan, v1.Image, smoke.Options) (smoke.Report, error) {
	return smoke.Report{}, nil
}
func (r *recorder) Close() error { return nil }
func (r *recorder) Build(_ context.Context, _ *plan.Plan, _ map[string]string, dir string, _ progress.Sink) ([]engine.Stage, error) {
	r.built = append(r.built, dir)
	return nil, nil
}

// TestCheckedRefusesBadInputBeforeTheEngine: the checks every engine relies on run once, in
// the wrapper, and a refused build never reaches the engine.
func TestCheckedRefusesBadInputBeforeTheEngine(t *testing.T) {
	dir := t.TempDir()
	raw := filepath.Join(dir, "zlib-1.3.1.tar.gz")
	b := smallTarGz(t, "zlib-1.3.1/README", "zlib")
	if err := os.WriteFile(raw, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	src := plan.Source{Component: "zlib", Version: "1.3.1", FileName: "zlib-1.3.1.tar.gz", SHA256: hex.EncodeToString(sum[:])}
	tarball, err := source.PrepareFile(context.Background(), raw, filepath.Join(dir, "cache"))
	if err != nil {
		t.Fatal(err)
	}
	// A prepared archive changed after it was written (same name, other bytes).
	changed := filepath.Join(dir, "changed", filepath.Base(tarball))
	os.MkdirAll(filepath.Dir(changed), 0o755)
	if err := os.WriteFile(changed, b, 0o644); err != nil {
		t.Fatal(err)
	}
	good := func() *plan.Plan {
		return &plan.Plan{Final: "nginx", Stages: []plan.Stage{
			{Name: "zlib", Source: src},
			{Name: "nginx", Source: src, Deps: []string{"zlib"}},
		}}
	}
	sources := map[string]string{"zlib": tarball}
	full := filepath.Join(dir, "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	outOfOrder := good()
	outOfOrder.Stages[0], outOfOrder.Stages[1] = outOfOrder.Stages[1], outOfOrder.Stages[0]
	noFinal := good()
	noFinal.Final = "pgo-train"

	for _, c := range []struct {
		name    string
		p       *plan.Plan
		sources map[string]string
		dir     string
		want    string
	}{
		{"out of order", outOfOrder, sources, filepath.Join(dir, "t1"), `depends on "zlib", which is not an earlier stage`},
		{"no final stage", noFinal, sources, filepath.Join(dir, "t2"), `final stage "pgo-train"`},
		{"checksum", good(), map[string]string{"zlib": changed}, filepath.Join(dir, "t3"), "the file is corrupt or tampered with"},
		{"a downloaded archive, not a prepared one", good(), map[string]string{"zlib": raw}, filepath.Join(dir, "t5"), "never a downloaded archive"},
		{"missing source", good(), map[string]string{}, filepath.Join(dir, "t4"), "no source tarball given for zlib"},
		{"tree not empty", good(), sources, full, "is not empty"},
	} {
		r := &recorder{}
		_, err := engine.Checked(r).Build(context.Background(), c.p, c.sources, c.dir, progress.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "recorder engine") {
			t.Errorf("%s: err %v, want one naming the engine and %q", c.name, err, c.want)
		}
		if len(r.built) > 0 {
			t.Errorf("%s: the engine was asked to build", c.name)
		}
	}

	r := &recorder{}
	if _, err := engine.Checked(engine.Checked(r)).Build(context.Background(), good(), sources, "rel-tree", progress.Discard); err != nil {
		t.Fatalf("good input: %v", err)
	}
	if len(r.built) != 1 || !filepath.IsAbs(r.built[0]) {
		t.Errorf("the engine got %q, want one absolute tree directory", r.built)
	}
}
