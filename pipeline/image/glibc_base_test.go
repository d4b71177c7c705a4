//go:build integration

package image_test

import (
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
)

// TestGlibcVersionStandInBase reads the glibc of the stand-in distroless base (Debian
// trixie's real packages laid out as distroless does, status.d included) and compares it
// with the libc6 version the base was made from; the same base without libc6 is refused.
func TestGlibcVersionStandInBase(t *testing.T) {
	img, rootfs := basetest.For(t, basetest.Options{})
	got, err := image.GlibcVersion(img)
	if err != nil {
		t.Fatalf("GlibcVersion(stand-in base): %v", err)
	}
	deb := rootfs.Versions["libc6"]
	t.Logf("stand-in base: libc6 %s, GlibcVersion %s", deb, got)
	if deb == "" || !strings.HasPrefix(deb, got+"-") && !strings.HasPrefix(deb, got+".") {
		t.Errorf("GlibcVersion = %q, but the base has libc6 %q", got, deb)
	}
	// Debian 13 carries glibc 2.41: newer than Ubuntu 24.04's 2.39, so the shipped builder
	// and runtime pair passes; Debian 12's 2.36 does not.
	if err := image.CompareGlibc("2.39", got); err != nil {
		t.Errorf("the trixie base is refused for an Ubuntu 24.04 builder: %v", err)
	}

	noLibc, _ := basetest.For(t, basetest.Options{NoLibc: true})
	if v, err := image.GlibcVersion(noLibc); err == nil {
		t.Errorf("GlibcVersion of a base without libc6 = %q, want an error", v)
	}
}
