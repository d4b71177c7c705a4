package image

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// imageOf builds an image with one layer per file map, lowest layer first.
func imageOf(t *testing.T, layers ...map[string][]byte) v1.Image {
	t.Helper()
	img := empty.Image
	for _, files := range layers {
		l, err := crane.Layer(files)
		if err != nil {
			t.Fatal(err)
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

const ubuntuStatus = `Package: base-files
Status: install ok installed
Version: 13ubuntu10
Description: Debian base system miscellaneous files
 This package contains the basic filesystem hierarchy.

Package: libc6
Status: install ok installed
Priority: optional
Architecture: amd64
Multi-Arch: same
Version: 2.39-0ubuntu8.3
Description: GNU C Library: Shared libraries
 Contains the standard libraries that are used by nearly all programs on
 the system.

Package: zlib1g
Status: install ok installed
Version: 1:1.3.dfsg-3.1ubuntu2
`

func TestGlibcVersion(t *testing.T) {
	tests := []struct {
		name   string
		layers []map[string][]byte
		want   string
	}{
		{"dpkg status (Debian, Ubuntu)", []map[string][]byte{{
			"var/lib/dpkg/status": []byte(ubuntuStatus),
		}}, "2.39"},
		{"distroless status.d", []map[string][]byte{{
			"var/lib/dpkg/status.d/base-files":      []byte("Package: base-files\nVersion: 13.8\n"),
			"var/lib/dpkg/status.d/libc6":           []byte("Package: libc6\nVersion: 2.41-12\nArchitecture: amd64\n"),
			"var/lib/dpkg/status.d/libc6.md5sums":   []byte("0123 lib/x86_64-linux-gnu/libc.so.6\n"),
			"usr/lib/os-release":                    []byte("PRETTY_NAME=\"Distroless\"\n"),
			"usr/lib/x86_64-linux-gnu/libc.so.6":    []byte("\x7fELF not a banner"),
			"var/lib/dpkg/status.d/netbase.md5sums": []byte(""),
		}}, "2.41"},
		{"upper layer replaces the status file", []map[string][]byte{
			{"var/lib/dpkg/status": []byte("Package: libc6\nStatus: install ok installed\nVersion: 2.36-9+deb12u4\n")},
			{"var/lib/dpkg/status": []byte(ubuntuStatus)},
		}, "2.39"},
		{"removed libc6 stanza is ignored", []map[string][]byte{{
			"var/lib/dpkg/status": []byte("Package: libc6\nStatus: deinstall ok config-files\nVersion: 2.31-13\n\n" +
				"Package: libc6\nStatus: install ok installed\nVersion: 2.36-9\n"),
		}}, "2.36"},
		{"epoch in the version", []map[string][]byte{{
			"var/lib/dpkg/status": []byte("Package: libc6\nStatus: install ok installed\nVersion: 1:2.40-1\n"),
		}}, "2.40"},
		{"no package database: libc.so.6 banner", []map[string][]byte{{
			"lib/x86_64-linux-gnu/libc.so.6": []byte("\x7fELF\x00junk\x00GNU C Library (Ubuntu GLIBC 2.39-0ubuntu8) stable release version 2.39.\nCopyright"),
		}}, "2.39"},
		{"old versioned file name", []map[string][]byte{{
			"lib/x86_64-linux-gnu/libc-2.31.so": []byte("\x7fELF"),
		}}, "2.31"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GlibcVersion(imageOf(t, tc.layers...))
			if err != nil {
				t.Fatalf("GlibcVersion: %v", err)
			}
			if got != tc.want {
				t.Errorf("GlibcVersion = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestGlibcVersionNoGlibc(t *testing.T) {
	img := imageOf(t, map[string][]byte{
		"etc/os-release":          []byte("NAME=\"Alpine Linux\"\nPRETTY_NAME=\"Alpine Linux v3.20\"\n"),
		"lib/ld-musl-x86_64.so.1": []byte("\x7fELF"),
	})
	_, err := GlibcVersion(img)
	if err == nil {
		t.Fatal("GlibcVersion of a musl image succeeded")
	}
	for _, want := range []string{"Alpine Linux v3.20", "has no glibc", "debian13"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

// TestGlibcVersionRealFiles reads this machine's real dpkg database and real libc.so.6 and
// compares both readers with what glibc itself reports (getconf GNU_LIBC_VERSION).
func TestGlibcVersionRealFiles(t *testing.T) {
	out, err := exec.Command("getconf", "GNU_LIBC_VERSION").Output()
	if err != nil {
		t.Skipf("skipped: getconf GNU_LIBC_VERSION failed (not a glibc host?): %v", err)
	}
	want := strings.TrimPrefix(strings.TrimSpace(string(out)), "glibc ")
	libc, err := exec.Command("sh", "-c", "ldconfig -p | awk '/libc.so.6 .*x86-64|libc.so.6 .*AArch64/ {print $NF; exit}'").Output()
	libcPath := strings.TrimSpace(string(libc))
	if err != nil || libcPath == "" {
		libcPath = "/lib/x86_64-linux-gnu/libc.so.6"
	}
	libcBytes, err := os.ReadFile(libcPath)
	if err != nil {
		t.Skipf("skipped: cannot read the host's libc.so.6 at %s: %v", libcPath, err)
	}
	status, err := os.ReadFile("/var/lib/dpkg/status")
	if err != nil {
		t.Skipf("skipped: no dpkg database on this host: %v", err)
	}
	for name, files := range map[string]map[string][]byte{
		"dpkg status": {"var/lib/dpkg/status": status},
		"libc banner": {strings.TrimPrefix(libcPath, "/"): libcBytes},
	} {
		got, err := GlibcVersion(imageOf(t, files))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got != want {
			t.Errorf("%s: GlibcVersion = %q, getconf says %q", name, got, want)
		}
	}
}

func TestCompareGlibc(t *testing.T) {
	for _, tc := range []struct{ builder, runtime string }{
		{"2.39", "2.39"}, {"2.39", "2.41"}, {"2.9", "2.10"}, {"2.41", "3.0"},
	} {
		if err := CompareGlibc(tc.builder, tc.runtime); err != nil {
			t.Errorf("CompareGlibc(%s, %s) = %v, want nil", tc.builder, tc.runtime, err)
		}
	}
	err := CompareGlibc("2.39", "2.36")
	if err == nil {
		t.Fatal("CompareGlibc(2.39, 2.36) accepted an older runtime")
	}
	for _, want := range []string{"glibc 2.36", "builder's 2.39", "GLIBC_2.38", "-debian13"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if err := CompareGlibc("2.10", "2.9"); err == nil {
		t.Error("CompareGlibc(2.10, 2.9) compared as strings, not numbers")
	}
	if err := CompareGlibc("2.39", "musl"); err == nil || !strings.Contains(err.Error(), `"musl"`) {
		t.Errorf("CompareGlibc with a bad version = %v, want an error naming it", err)
	}
}

// checkBaseGlibc is the build's preflight check of a runtime image (pipeline/forge): read
// the glibc of both images and refuse a runtime older than the builder.
func checkBaseGlibc(ctx context.Context, builderRef, runtimeRef string, platform v1.Platform) error {
	read := func(ref string) (string, error) {
		r, err := name.ParseReference(ref)
		if err != nil {
			return "", err
		}
		img, err := remote.Image(r, remote.WithContext(ctx), remote.WithPlatform(platform))
		if err != nil {
			return "", fmt.Errorf("fetching %s: %w", ref, err)
		}
		return GlibcVersion(img)
	}
	bv, err := read(builderRef)
	if err != nil {
		return err
	}
	rv, err := read(runtimeRef)
	if err != nil {
		return err
	}
	if err := CompareGlibc(bv, rv); err != nil {
		return fmt.Errorf("runtime image %s: %w", runtimeRef, err)
	}
	return nil
}

// TestBaseGlibcCheck pulls both bases from an in-process registry, the way a build does.
func TestBaseGlibcCheck(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	push := func(repo string, img v1.Image) string {
		ref, err := name.ParseReference(u.Host + "/" + repo)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img); err != nil {
			t.Fatal(err)
		}
		return ref.String()
	}
	builder := push("ubuntu:24.04", imageOf(t, map[string][]byte{"var/lib/dpkg/status": []byte(ubuntuStatus)}))
	bookworm := push("distroless/base-debian12", imageOf(t, map[string][]byte{"var/lib/dpkg/status.d/libc6": []byte("Package: libc6\nVersion: 2.36-9+deb12u10\n")}))
	trixie := push("distroless/base-debian13", imageOf(t, map[string][]byte{"var/lib/dpkg/status.d/libc6": []byte("Package: libc6\nVersion: 2.41-12\n")}))
	ctx := context.Background()
	plat := v1.Platform{OS: "linux", Architecture: "amd64"}

	if err := checkBaseGlibc(ctx, builder, trixie, plat); err != nil {
		t.Errorf("CheckBaseGlibc(ubuntu 24.04, debian13) = %v, want nil", err)
	}
	err := checkBaseGlibc(ctx, builder, bookworm, plat)
	if err == nil {
		t.Fatal("CheckBaseGlibc(ubuntu 24.04, debian12) accepted a runtime with glibc 2.36")
	}
	if !strings.Contains(err.Error(), bookworm) || !strings.Contains(err.Error(), "2.36") {
		t.Errorf("error %q does not name the runtime image and its glibc", err)
	}
	if err := checkBaseGlibc(ctx, builder, u.Host+"/missing:1", plat); err == nil || !strings.Contains(err.Error(), "missing:1") {
		t.Errorf("CheckBaseGlibc with a missing runtime image = %v, want an error naming it", err)
	}
}
