// Package imagefs reads the files of an image's flattened filesystem (go-containerregistry's
// mutate.Extract): the image package reads the base's dpkg records through it, and the Dagger
// engine reads the image's nginx.conf before serving it. One walk, so both see a path the
// same way: relative, cleaned, regular files only.
package imagefs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// errStop ends a Walk early without an error (ReadFile, once it has its file).
var errStop = errors.New("stop walking")

// Walk calls fn for each regular file of img, with its path relative to the root (no
// leading slash) and its content; fn's error ends the walk and is returned.
func Walk(img v1.Image, fn func(p string, r io.Reader) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the image's filesystem: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		if err := fn(strings.TrimPrefix(path.Clean("/"+h.Name), "/"), tr); err != nil {
			if errors.Is(err, errStop) {
				return nil
			}
			return err
		}
	}
}

// ReadFile returns the content of the regular file want (a path relative to the root) in img.
func ReadFile(img v1.Image, want string) ([]byte, error) {
	var data []byte
	found := false
	err := Walk(img, func(p string, r io.Reader) error {
		if p != want {
			return nil
		}
		b, err := io.ReadAll(r)
		if err != nil {
			return fmt.Errorf("reading %s from the image: %w", want, err)
		}
		data, found = b, true
		return errStop
	})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("the image has no %s", want)
	}
	return data, nil
}
