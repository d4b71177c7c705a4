package image

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// What ci build --output and ci base --output write reads back through every spelling
// ParseSource takes, as the same image; and a local base is named by digest alone in the
// annotations and the SBOM, never by a path on the building machine.
func TestLocalImageSources(t *testing.T) {
	base := syntheticBase(t, "amd64")
	want, err := base.Digest()
	if err != nil {
		t.Fatal(err)
	}
	wantConfig, err := base.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	layoutDir := filepath.Join(dir, "base")
	if err := writeLayout(layoutDir, base, "nonroot", nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	tarFile := filepath.Join(dir, "base.tar")
	if err := WriteOutput(tarFile, base, "localhost/base:nonroot", nil, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	amd64 := v1.Platform{OS: "linux", Architecture: "amd64"}
	for _, ref := range []string{"oci:" + layoutDir, "oci:" + layoutDir + ":nonroot", "docker-archive:" + tarFile, "docker-archive:" + tarFile + ":localhost/base:nonroot"} {
		img, err := PullBase(context.Background(), ref, amd64)
		if err != nil {
			t.Errorf("PullBase(%s): %v", ref, err)
			continue
		}
		// A docker-archive holds the config and layers, not the manifest (docker load
		// writes Docker media types): the config names the same image.
		if got, _ := img.ConfigName(); got != wantConfig {
			t.Errorf("PullBase(%s) has config %s, want %s", ref, got, wantConfig)
		}
	}

	img, err := PullBase(context.Background(), "oci:"+layoutDir, amd64)
	if err != nil {
		t.Fatal(err)
	}
	out := assembleOn(t, img, WithBaseRef("oci:"+layoutDir))
	m, err := out.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := m.Annotations[annotationBaseName]; ok {
		t.Errorf("a local base is named %q in %s; want no name", n, annotationBaseName)
	}
	if d := m.Annotations[annotationBaseDigest]; d != want.String() {
		t.Errorf("%s = %q, want %s", annotationBaseDigest, d, want)
	}
	doc, err := SBOM(out, testLock(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), layoutDir) {
		t.Errorf("the SBOM names the local path %s", layoutDir)
	}
	if !strings.Contains(string(doc), "base image "+want.String()) {
		t.Errorf("the SBOM does not name the base by its digest %s", want)
	}
}

// Each wrong spelling is refused naming the input and what would be right.
func TestParseSourceErrors(t *testing.T) {
	dir := t.TempDir()
	two := filepath.Join(dir, "two")
	if err := writeLayout(two, syntheticBase(t, "amd64"), "a", nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	p, err := layout.FromPath(two)
	if err != nil {
		t.Fatal(err)
	}
	other, err := mutate.Config(syntheticBase(t, "amd64"), v1.Config{User: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(other, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": "b"})); err != nil {
		t.Fatal(err)
	}
	amd64 := &v1.Platform{OS: "linux", Architecture: "amd64"}
	for _, c := range []struct{ ref, want string }{
		{"oci:", "names no path"},
		{"oci:" + filepath.Join(dir, "missing"), "no such file or directory"},
		{"docker-archive:" + filepath.Join(dir, "missing.tar"), "no such file or directory"},
		{"UPPER/case", "parsing reference"},
		{"oci:" + two, `holds 2 images ("a", "b"): name one as oci:` + two + ":TAG"},
		{"oci:" + two + ":c", `has no image tagged "c"`},
	} {
		src, err := ParseSource(c.ref)
		if err == nil {
			_, err = src.Image(context.Background(), amd64)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error with %q", c.ref, err, c.want)
		}
	}
}
