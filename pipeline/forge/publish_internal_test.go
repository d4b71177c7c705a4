package forge

import (
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/sign"
)

// An image the build read is named in the provenance as the SBOM names the base: the purl of
// the OCI image by the digest pulled (image.OCIPurl), whether the reference has a tag, a
// digest or both; an image read from a file here by its digest alone; the host engine's
// machine toolchain not at all.
func TestImageDependencyIsTheSBOMsPurl(t *testing.T) {
	hex := strings.Repeat("cd", 32)
	digest := "sha256:" + hex
	for _, tc := range []struct{ ref, uri string }{
		{"gcr.io/distroless/base-nossl-debian13:nonroot", "pkg:oci/base-nossl-debian13@sha256:" + hex + "?repository_url=gcr.io%2Fdistroless%2Fbase-nossl-debian13"},
		{"docker.io/library/ubuntu:24.04@sha256:" + hex, "pkg:oci/ubuntu@sha256:" + hex + "?repository_url=docker.io%2Flibrary%2Fubuntu"},
		{"127.0.0.1:5000/mirror/ubuntu", "pkg:oci/ubuntu@sha256:" + hex + "?repository_url=127.0.0.1%3A5000%2Fmirror%2Fubuntu"},
		{"oci:/tmp/base", ""},
		{"docker-archive:/tmp/base.tar", ""},
	} {
		if got, want := imageDependency(tc.ref, digest), (sign.Dependency{URI: tc.uri, Digest: digest}); got != want {
			t.Errorf("%s: %+v, want %+v", tc.ref, got, want)
		}
	}
	pulled := "docker.io/library/ubuntu:24.04@" + digest
	if got, want := builderDependency(pulled), imageDependency("docker.io/library/ubuntu:24.04", digest); got != want {
		t.Errorf("builder %s: %+v, want %+v", pulled, got, want)
	}
	if got := builderDependency(""); got != (sign.Dependency{}) {
		t.Errorf("no builder image (the host engine): %+v, want none", got)
	}
}
