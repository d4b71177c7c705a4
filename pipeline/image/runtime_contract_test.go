package image_test

import (
	"slices"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

// TestRuntimeContractMatchesPlan: the image this package assembles and the one the rendered
// Dockerfile builds (from plan.Runtime) must start, listen and write the same way.
func TestRuntimeContractMatchesPlan(t *testing.T) {
	if !slices.Equal(image.Entrypoint, plan.Runtime.Entrypoint) {
		t.Errorf("entrypoint: image %q, plan %q", image.Entrypoint, plan.Runtime.Entrypoint)
	}
	if !slices.Equal(image.ExposedPorts, plan.Runtime.Ports) {
		t.Errorf("ports: image %q, plan %q", image.ExposedPorts, plan.Runtime.Ports)
	}
	if !slices.Equal(image.WritableDirs, plan.Runtime.WritableDirs) {
		t.Errorf("writable dirs: image %q, plan %q", image.WritableDirs, plan.Runtime.WritableDirs)
	}
}
