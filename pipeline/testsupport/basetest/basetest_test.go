//go:build integration

package basetest

import (
	"archive/tar"
	"context"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
)

type fileEntry struct {
	hdr  *tar.Header
	body string // the content of regular files under 1 MiB
}

// imageFiles lists the image's flattened filesystem by path ("etc/passwd": no leading
// "./", no trailing "/").
func imageFiles(t *testing.T, img v1.Image) map[string]fileEntry {
	t.Helper()
	files := map[string]fileEntry{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		var body string
		if h.Typeflag == tar.TypeReg && h.Size < 1<<20 {
			b, _ := io.ReadAll(tr)
			body = string(b)
		}
		files[strings.TrimSuffix(strings.TrimPrefix(h.Name, "./"), "/")] = fileEntry{h, body}
	}
}

// The stand-in has distroless's file set: glibc and its loader, the users, the CA bundle,
// tzdata, a sticky /tmp, nonroot's home owned by 65532, and no shell.
func TestStandInBase(t *testing.T) {
	img, r := For(t, Options{})
	t.Logf("rootfs %s: %v", r.Dir, r.Versions)

	files := imageFiles(t, img)
	for _, p := range []string{
		"usr/lib/x86_64-linux-gnu/libc.so.6", "usr/lib64/ld-linux-x86-64.so.2", "lib64",
		"etc/ssl/certs/ca-certificates.crt", "usr/share/zoneinfo/UTC", "etc/services", "etc/mime.types",
		"etc/os-release", "etc/nsswitch.conf",
	} {
		if _, ok := files[p]; !ok {
			t.Errorf("stand-in base lacks %s", p)
		}
	}
	for _, p := range []string{"bin/sh", "usr/bin/sh", "usr/bin/bash", "usr/bin/dash", "usr/sbin/update-ca-certificates"} {
		if _, ok := files[p]; ok {
			t.Errorf("stand-in base has %s; distroless has no shell", p)
		}
	}
	if !strings.Contains(files["etc/passwd"].body, "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no nonroot user:\n%s", files["etc/passwd"].body)
	}
	if !strings.Contains(files["etc/os-release"].body+files["usr/lib/os-release"].body, "trixie") {
		t.Errorf("os-release does not say trixie")
	}
	if h := files["tmp"].hdr; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp header %+v, want mode 1777", h)
	}
	if h := files["home/nonroot"].hdr; h == nil || h.Uid != 65532 || h.Gid != 65532 || h.Mode != 0o700 {
		t.Errorf("/home/nonroot header %+v, want 65532:65532 0700", h)
	}
	if h := files["etc/passwd"].hdr; h.Uid != 0 || h.ModTime.Unix() != 0 {
		t.Errorf("/etc/passwd header uid %d mtime %v, want root at the epoch", h.Uid, h.ModTime)
	}
	if n := strings.Count(files["etc/ssl/certs/ca-certificates.crt"].body, "BEGIN CERTIFICATE"); n < 100 {
		t.Errorf("CA bundle holds %d certificates, want the whole Mozilla set (>100)", n)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532" || cf.Architecture != "amd64" || cf.OS != "linux" {
		t.Errorf("config user %q platform %s/%s", cf.Config.User, cf.OS, cf.Architecture)
	}

	// Same rootfs, same digest.
	again, err := Image(r, "")
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("stand-in base digest not stable: %s then %s", d1, d2)
	}
	layers, _ := img.Layers()
	for _, l := range layers {
		c, _ := l.Size()
		var u int64
		rc, _ := l.Uncompressed()
		u, _ = io.Copy(io.Discard, rc)
		rc.Close()
		t.Logf("stand-in base %s: layer %d bytes compressed, %d uncompressed", d1, c, u)
	}
}

// The variant without libc is what the smoke tests use to prove a missing loader is caught.
func TestStandInBaseWithoutLibc(t *testing.T) {
	_, r := For(t, Options{NoLibc: true})
	if _, ok := r.Versions["libc6"]; ok {
		t.Fatalf("NoLibc rootfs lists libc6: %v", r.Versions)
	}
	img, err := Image(r, "")
	if err != nil {
		t.Fatal(err)
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(h.Name, "libc.so") || strings.Contains(h.Name, "ld-linux") {
			t.Errorf("NoLibc image has %s", h.Name)
		}
	}
}

// Pushed to the real registry and read back, the stand-in keeps its digest.
func TestPushStandInToRealRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	d := PushFor(t, reg.Host, "distroless/base-nossl-debian13", Options{})
	got, err := remote.Image(d, remote.WithContext(context.Background()))
	if err != nil {
		t.Fatalf("pulling %s back: %v", d, err)
	}
	gd, _ := got.Digest()
	if gd.String() != d.DigestStr() {
		t.Errorf("pulled %s, pushed %s", gd, d.DigestStr())
	}
}

// The arm64 stand-in (the runtime base of the arm64 tests): Debian trixie's arm64 packages,
// an AArch64 loader and libc, configured linux/arm64/v8 as distroless's arm64 images are.
func TestStandInBaseARM64(t *testing.T) {
	img, r := For(t, Options{Arch: "arm64"})
	t.Logf("rootfs %s: %v", r.Dir, r.Versions)
	files := imageFiles(t, img)
	for _, p := range []string{"usr/lib/aarch64-linux-gnu/libc.so.6", "usr/lib/ld-linux-aarch64.so.1", "etc/ssl/certs/ca-certificates.crt"} {
		if _, ok := files[p]; !ok {
			t.Errorf("arm64 stand-in base lacks %s", p)
		}
	}
	if _, ok := files["usr/lib/x86_64-linux-gnu/libc.so.6"]; ok {
		t.Error("arm64 stand-in base has amd64's libc")
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "arm64" || cf.Variant != "v8" || cf.Config.User != "65532" {
		t.Errorf("config %s/%s/%s user %q, want linux/arm64/v8 user 65532", cf.OS, cf.Architecture, cf.Variant, cf.Config.User)
	}
	amd, _ := For(t, Options{})
	if cf, _ := amd.ConfigFile(); cf.Variant != "" {
		t.Errorf("the amd64 stand-in gained variant %q", cf.Variant)
	}
}
