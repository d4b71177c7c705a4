package image

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// WriteOutput writes img for --output: a path ending in ".tar" gets a tarball that
// `docker load` and `podman load` read (named refName, a full reference such as
// "ghcr.io/nginx-forge/nginx:1.26.3"); any other path gets an OCI layout directory (see
// writeLayout). Either way the SBOM, when given, is also written as PATH.spdx.json.
func WriteOutput(path string, img v1.Image, refName string, sbom []byte, created time.Time) error {
	if !strings.HasSuffix(path, ".tar") {
		tag := refName
		if r, err := name.NewTag(refName); err == nil {
			tag = r.TagStr()
		}
		return writeLayout(path, img, tag, sbom, created)
	}
	if refName == "" {
		refName = "nginx-forge:latest"
	}
	tag, err := name.NewTag(refName)
	if err != nil {
		return fmt.Errorf("parsing image name %q for the tarball: %w", refName, err)
	}
	if err := tarball.WriteToFile(path, tag, img); err != nil {
		return fmt.Errorf("writing image tarball %s: %w", path, err)
	}
	if sbom != nil {
		if err := os.WriteFile(path+".spdx.json", sbom, 0o644); err != nil {
			return fmt.Errorf("writing SBOM beside the tarball: %w", err)
		}
	}
	return nil
}

// writeLayout writes img as an OCI image layout directory (for --output), readable by
// umoci, skopeo (oci:DIR:TAG), crane and go-containerregistry's layout package.
// index.json lists the image, annotated with org.opencontainers.image.ref.name = refName
// when refName is not empty, and, when sbom is not nil, the SBOM referrer artifact. The
// SBOM document is also written beside the directory as DIR.spdx.json.
//
// dir must be absent, empty, or an earlier OCI layout (whose index.json is replaced; blobs
// it no longer lists are left, as they are content-addressed and harmless). Anything else
// is refused rather than mixed with.
func writeLayout(dir string, img v1.Image, refName string, sbom []byte, created time.Time) error {
	if err := checkLayoutDir(dir); err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	p, err := layout.Write(dir, idx)
	if err != nil {
		return fmt.Errorf("writing OCI layout %s: %w", dir, err)
	}
	var lopts []layout.Option
	if refName != "" {
		lopts = append(lopts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": refName}))
	}
	if err := p.AppendImage(img, lopts...); err != nil {
		return fmt.Errorf("writing image into OCI layout %s: %w", dir, err)
	}
	if sbom == nil {
		return nil
	}
	art, err := sbomArtifact(img, sbom, created)
	if err != nil {
		return fmt.Errorf("making SBOM artifact: %w", err)
	}
	if err := p.AppendImage(art); err != nil {
		return fmt.Errorf("writing SBOM artifact into OCI layout %s: %w", dir, err)
	}
	beside := strings.TrimRight(filepath.Clean(dir), string(filepath.Separator)) + ".spdx.json"
	if err := os.WriteFile(beside, sbom, 0o644); err != nil {
		return fmt.Errorf("writing SBOM beside the layout: %w", err)
	}
	return nil
}

func checkLayoutDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory %q: %w", dir, err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "oci-layout")); err == nil {
		return nil
	}
	return fmt.Errorf("output directory %q is neither empty nor an OCI layout; choose a new directory or remove it", dir)
}
