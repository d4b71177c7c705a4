package imagefs

import (
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
)

func TestReadFile(t *testing.T) {
	layer, err := random.Layer(1, "")
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	if err := Walk(img, func(p string, _ io.Reader) error { name = p; return errStop }); err != nil || name == "" {
		t.Fatalf("Walk: %q, %v", name, err)
	}
	if b, err := ReadFile(img, name); err != nil || len(b) == 0 {
		t.Errorf("ReadFile(%s) = %d bytes, %v", name, len(b), err)
	}
	if _, err := ReadFile(img, "etc/nginx/nginx.conf"); err == nil || !strings.Contains(err.Error(), "has no etc/nginx/nginx.conf") {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}
