//go:build integration

package image_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/image"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The real thing: the stack built by the host executor from the test lock, on the
// stand-in distroless base pulled from Debian's registry, assembled twice (the second
// time from a copy of the tree with other mtimes) to the same digest, written as an OCI
// layout, published with its SBOM, pulled back. Prints the layer sizes.
func TestEndToEndBuiltTree(t *testing.T) {
	tree := testenv.BuiltTree(t)
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	reg := registrytest.Start(t)
	ctx := context.Background()

	baseRef := basetest.PushFor(t, reg.Host, "distroless/base-nossl-debian13", basetest.Options{})
	base, err := remote.Image(baseRef, remote.WithContext(ctx))
	if err != nil {
		t.Fatalf("pulling the stand-in base %s: %v", baseRef, err)
	}
	libcrypt := hostPackageVersion(t, "libcrypt-dev")
	opts := []image.Option{image.WithBaseRef(baseRef.String()), image.WithLibcrypt(libcrypt)}

	img, err := image.Assemble(base, tree, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	// A rebuilt copy of the tree: same content, new mtimes.
	copyDir := filepath.Join(t.TempDir(), "tree")
	if out, err := exec.Command("cp", "-r", tree, copyDir).CombinedOutput(); err != nil {
		t.Fatalf("copying the tree: %v: %s", err, out)
	}
	later := time.Now().Add(time.Hour)
	filepath.Walk(copyDir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode()&os.ModeSymlink == 0 {
			os.Chtimes(p, later, later)
		}
		return nil
	})
	again, err := image.Assemble(base, copyDir, l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Fatalf("same lock and tree content, different digests: %s vs %s", d1, d2)
	}

	sbom, err := image.SBOM(img, l)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "oci")
	created := time.Unix(l.SourceDateEpoch, 0)
	if err := image.WriteLayout(out, img, "1.26.3", sbom, created); err != nil {
		t.Fatal(err)
	}

	repo := reg.Ref("nginx-forge/nginx")
	var verifiedNginx bool
	res, err := image.Publish(ctx, img, repo, image.Tags(l, image.TagEvent{Latest: true}),
		image.WithKeychain(authn.NewMultiKeychain()),
		image.WithSBOM(sbom, created),
		image.WithVerify(func(ctx context.Context, ref name.Digest) error {
			pulled, err := remote.Image(ref, remote.WithContext(ctx))
			if err != nil {
				return err
			}
			verifiedNginx, err = hasStaticallyLinkedNginx(pulled)
			return err
		}))
	if err != nil {
		t.Fatal(err)
	}
	if !verifiedNginx {
		t.Error("the pulled image's usr/sbin/nginx is not a dynamically linked ELF needing only libc")
	}
	if got, _ := remote.Head(mustTag(t, repo+":latest")); got == nil || got.Digest != d1 {
		t.Errorf("latest does not point at %s", d1)
	}

	// Sizes for the issue: each layer compressed and uncompressed, and the totals.
	layers, _ := img.Layers()
	var tc, tu int64
	var report strings.Builder
	for i, layer := range layers {
		c, _ := layer.Size()
		rc, err := layer.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		u, _ := io.Copy(io.Discard, rc)
		rc.Close()
		what := "base (stand-in distroless base-nossl-debian13)"
		if i == len(layers)-1 {
			what = "nginx install tree"
		}
		fmt.Fprintf(&report, "layer %d %-48s %9d bytes compressed %9d uncompressed\n", i, what, c, u)
		tc += c
		tu += u
	}
	fmt.Fprintf(&report, "total %57d bytes compressed %9d uncompressed\n", tc, tu)
	t.Logf("published %s (SBOM %s)\n%s", res.Digest, res.SBOM, report.String())
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

func hostPackageVersion(t *testing.T, pkg string) string {
	t.Helper()
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
	if err != nil || len(out) == 0 {
		testenv.Missing(t, "the package "+pkg, "apt-get install "+pkg)
	}
	return string(out)
}

// hasStaticallyLinkedNginx: usr/sbin/nginx is an ELF whose only needed libraries are
// glibc's (OpenSSL, PCRE2, zlib and libcrypt are static).
func hasStaticallyLinkedNginx(img v1.Image) (bool, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return false, fmt.Errorf("image has no usr/sbin/nginx")
		}
		if err != nil {
			return false, err
		}
		if strings.TrimPrefix(h.Name, "/") != "usr/sbin/nginx" {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return false, err
		}
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return false, fmt.Errorf("usr/sbin/nginx: %w", err)
		}
		libs, err := f.ImportedLibraries()
		if err != nil {
			return false, err
		}
		for _, lib := range libs {
			glibc := false
			for _, g := range []string{"libc.so", "ld-linux", "libm.so", "libpthread.so", "libdl.so", "librt.so"} {
				glibc = glibc || strings.HasPrefix(lib, g)
			}
			if !glibc {
				return false, fmt.Errorf("usr/sbin/nginx needs %s (want only libc): %v", lib, libs)
			}
		}
		return true, nil
	}
}
