package image

import (
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nginx-forge/nginx-forge/pipeline/internal/imagefs"
)

// eachFile calls fn for every regular file of img's root filesystem as a container sees it
// (mutate.Extract: the layers stacked, later ones winning, whiteouts applied), with its path
// relative to the root ("var/lib/dpkg/status") and a reader of its contents, which fn reads
// only as far as it needs. The SBOM's package list and the glibc check both read the base
// this way; an error from fn ends the walk and is returned as it is.
func eachFile(img v1.Image, fn func(p string, r io.Reader) error) error {
	return imagefs.Walk(img, fn)
}

// isDpkgStatus says whether p holds dpkg package records: Debian's and Ubuntu's single
// var/lib/dpkg/status, or distroless's one stanza file per package in status.d, which also
// holds NAME.md5sums and NAME.list files (only the stanza files, with no extension, are
// records).
func isDpkgStatus(p string) bool {
	return p == "var/lib/dpkg/status" || path.Dir(p) == "var/lib/dpkg/status.d" && !strings.Contains(path.Base(p), ".")
}

// readAll reads a file eachFile gave, naming it in the error.
func readAll(p string, r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	return b, nil
}
