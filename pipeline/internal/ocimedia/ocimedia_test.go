package ocimedia

import (
	"bytes"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/ocitest"
)

// ociTitle is an OCI manifest annotation, kept through the conversion.
const ociTitle = "org.opencontainers.image.title"

// TestToOCI: a Docker schema 2 image becomes OCI throughout with the same blobs (layer
// digests and sizes, config bytes); an OCI image is returned as it is.
func TestToOCI(t *testing.T) {
	docker, err := random.Image(512, 3)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := docker.MediaType(); mt != types.DockerManifestSchema2 {
		t.Fatalf("random.Image gave %s, want a Docker schema 2 image to start from", mt)
	}
	oci, err := ToOCI(docker)
	if err != nil {
		t.Fatal(err)
	}
	m := ocitest.CheckAllOCI(t, oci)
	dm, _ := docker.Manifest()
	if len(m.Layers) != len(dm.Layers) {
		t.Fatalf("%d layers, want %d", len(m.Layers), len(dm.Layers))
	}
	for i := range m.Layers {
		if m.Layers[i].Digest != dm.Layers[i].Digest || m.Layers[i].Size != dm.Layers[i].Size {
			t.Errorf("layer %d: %s (%d bytes), want the same blob %s (%d bytes)", i, m.Layers[i].Digest, m.Layers[i].Size, dm.Layers[i].Digest, dm.Layers[i].Size)
		}
	}
	wantCfg, _ := docker.RawConfigFile()
	gotCfg, _ := oci.RawConfigFile()
	if !bytes.Equal(gotCfg, wantCfg) || m.Config.Digest != dm.Config.Digest {
		t.Errorf("config blob changed: %s, want %s", m.Config.Digest, dm.Config.Digest)
	}

	same, err := ToOCI(oci)
	if err != nil || same != oci {
		t.Errorf("an OCI image was rewritten (err %v)", err)
	}
}

// TestToOCIMixed: an OCI manifest listing Docker-typed layers (what Assemble made on a
// Docker-typed base before ToOCI, and what issue 13's pushed image is) is made consistent,
// keeping the manifest's annotations.
func TestToOCIMixed(t *testing.T) {
	docker, err := random.Image(256, 2)
	if err != nil {
		t.Fatal(err)
	}
	mixed := mutate.MediaType(mutate.ConfigMediaType(docker, types.OCIConfigJSON), types.OCIManifestSchema1)
	mixed = mutate.Annotations(mixed, map[string]string{ociTitle: "nginx-forge"}).(v1.Image)
	if m, _ := mixed.Manifest(); m.Layers[0].MediaType != types.DockerLayer {
		t.Fatalf("setup: layer 0 is %s, want a Docker-typed layer in an OCI manifest", m.Layers[0].MediaType)
	}
	oci, err := ToOCI(mixed)
	if err != nil {
		t.Fatal(err)
	}
	if m := ocitest.CheckAllOCI(t, oci); m.Annotations[ociTitle] != "nginx-forge" {
		t.Errorf("annotations lost: %v", m.Annotations)
	}
}

// TestToOCIRefuses names what it cannot convert.
func TestToOCIRefuses(t *testing.T) {
	docker, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	schema1 := mutate.MediaType(docker, types.DockerManifestSchema1Signed)
	if _, err := ToOCI(schema1); err == nil || !strings.Contains(err.Error(), string(types.DockerManifestSchema1Signed)) {
		t.Errorf("schema 1 manifest: %v, want an error naming its media type", err)
	}
	l, _ := docker.Layers()
	foreign, err := mutate.Append(mutate.MediaType(empty.Image, types.DockerManifestSchema2), mutate.Addendum{Layer: l[0], MediaType: types.DockerForeignLayer})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := l[0].Digest()
	if _, err := ToOCI(foreign); err == nil || !strings.Contains(err.Error(), string(types.DockerForeignLayer)) || !strings.Contains(err.Error(), d.String()) {
		t.Errorf("foreign layer: %v, want an error naming the layer and its media type", err)
	}
}
