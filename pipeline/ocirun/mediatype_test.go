package ocirun

import (
	"reflect"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// TestAsOCIRewritesDockerMediaTypes: a Docker schema 2 image (what `docker build` and
// BuildKit push by default) becomes an OCI one with the same layers and config content,
// and an OCI image is left alone.
func TestAsOCIRewritesDockerMediaTypes(t *testing.T) {
	docker, err := random.Image(512, 3)
	if err != nil {
		t.Fatal(err)
	}
	if mt, _ := docker.MediaType(); mt != types.DockerManifestSchema2 {
		t.Fatalf("random.Image gave %s, want a Docker schema 2 image to start from", mt)
	}
	cf, err := docker.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.User = "65532"
	cf.Config.Entrypoint = []string{"/usr/sbin/nginx", "-g", "daemon off;"}
	if docker, err = mutate.ConfigFile(docker, cf); err != nil {
		t.Fatal(err)
	}

	oci, err := asOCI(docker)
	if err != nil {
		t.Fatal(err)
	}
	m, err := oci.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if m.MediaType != types.OCIManifestSchema1 || m.Config.MediaType != types.OCIConfigJSON {
		t.Errorf("manifest %s, config %s: want OCI types", m.MediaType, m.Config.MediaType)
	}
	dm, err := docker.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != len(dm.Layers) {
		t.Fatalf("%d layers, want %d", len(m.Layers), len(dm.Layers))
	}
	for i := range m.Layers {
		if m.Layers[i].MediaType != types.OCILayer {
			t.Errorf("layer %d: media type %s, want %s", i, m.Layers[i].MediaType, types.OCILayer)
		}
		if m.Layers[i].Digest != dm.Layers[i].Digest || m.Layers[i].Size != dm.Layers[i].Size {
			t.Errorf("layer %d: %s (%d bytes), want the same blob %s (%d bytes)", i, m.Layers[i].Digest, m.Layers[i].Size, dm.Layers[i].Digest, dm.Layers[i].Size)
		}
	}
	got, err := oci.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cf) {
		t.Errorf("config changed:\n got %+v\nwant %+v", got, cf)
	}

	same, err := asOCI(oci)
	if err != nil || same != oci {
		t.Errorf("an OCI image was rewritten (err %v)", err)
	}
}
