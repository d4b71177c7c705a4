// Package basetest gives tests the stand-in distroless base (pipeline/standin, what
// `ci base` makes) from the Debian mirror of this machine's apt sources, cached across
// test runs, and a stand-in builder image made by debootstrap. What a test cannot reach
// skips it, or fails it under NGINX_FORGE_E2E=1.
package basetest

import (
	"github.com/nginx-forge/nginx-forge/pipeline/standin"
)

// The product's names, so the tests read as before.
type (
	Options = standin.Options
	Rootfs  = standin.Rootfs
)

// Name is what the stand-in pretends to be.
const Name = standin.Name

// defaultCacheDir is shared with ci base as root: one cache per machine.
const defaultCacheDir = standin.DefaultCacheDir

var (
	// Packages are the Debian packages the stand-in is made of.
	Packages = standin.Packages
	// Image turns a rootfs into the stand-in image.
	Image = standin.Image
	// Push writes an image to a registry reference.
	Push = standin.Push
)
