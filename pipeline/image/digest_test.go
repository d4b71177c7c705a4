package image

import (
	"fmt"
	"strings"
	"testing"
)

// TestAssembleDigestGolden pins the digests Assemble gives on the fixed synthetic OCI base,
// for both architectures: the manifest, the config blob and the nginx layer. "The same
// lock gives the same image digest" is a promise of this project (README), and refactoring
// the runtime contract or the media-type handling must keep it: a change here means every
// published image would change digest for the same inputs. If the change is intended
// (new config field, new annotation), regenerate with `go test ./pipeline/image -update`
// and say so in the commit. A new Go release whose compress/flate output differs would
// also move the layer digest; that too is worth knowing.
func TestAssembleDigestGolden(t *testing.T) {
	var got strings.Builder
	for _, arch := range []string{"amd64", "arm64"} {
		img := assembleSynthetic(t, arch)
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := img.ConfigName()
		if err != nil {
			t.Fatal(err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatal(err)
		}
		top := m.Layers[len(m.Layers)-1]
		fmt.Fprintf(&got, "%s manifest %s\n%s config %s\n%s nginx-layer %s\n", arch, d, arch, cfg, arch, top.Digest)
	}
	golden(t, "digests.golden.txt", []byte(got.String()))
}
