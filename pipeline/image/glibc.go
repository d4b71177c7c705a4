package image

// The glibc check: a binary linked on the builder needs the glibc symbol versions of the
// builder's glibc (nginx built on Ubuntu 24.04's 2.39 needs GLIBC_2.38), so a runtime base
// with an older glibc (Debian 12's 2.36) starts it only to fail with "version `GLIBC_2.38'
// not found". Both executors refuse such a pair before building anything.

import (
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// glibcPackages are the dpkg package names that ship glibc itself (libc6 on most
// architectures; libc6.1 on alpha/ia64, kept for completeness of the lookup).
var glibcPackages = map[string]bool{"libc6": true, "libc6.1": true}

// libcReleaseRE matches the banner compiled into every libc.so.6:
// "GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36."
var libcReleaseRE = regexp.MustCompile(`GNU C Library [^\n]*? release version (\d+\.\d+)`)

var majorMinorRE = regexp.MustCompile(`^\d+\.\d+`)

// libcNameRE matches the pre-2.34 versioned library file name, e.g. libc-2.31.so.
var libcNameRE = regexp.MustCompile(`^libc-(\d+\.\d+)\.so$`)

// GlibcVersion returns the glibc version ("2.39") of an image's root filesystem. It reads,
// in order of trust: the libc6 entry of dpkg's database (var/lib/dpkg/status on Debian and
// Ubuntu, var/lib/dpkg/status.d/* on distroless), then the release banner inside libc.so.6,
// then a versioned libc-X.Y.so file name. An image without glibc (scratch, musl) is an error.
func GlibcVersion(img v1.Image) (string, error) {
	var fromDpkg, fromBanner, fromName, osName string
	err := eachFile(img, func(p string, r io.Reader) error {
		base := path.Base(p)
		switch {
		case isDpkgStatus(p):
			b, err := readAll(p, r)
			if err != nil {
				return err
			}
			if v := dpkgGlibcVersion(b); v != "" {
				fromDpkg = v
			}
		case base == "libc.so.6" && fromBanner == "":
			b, err := readAll(p, r)
			if err != nil {
				return err
			}
			if m := libcReleaseRE.FindSubmatch(b); m != nil {
				fromBanner = string(m[1])
			}
		case libcNameRE.MatchString(base):
			fromName = libcNameRE.FindStringSubmatch(base)[1]
		case p == "etc/os-release" || p == "usr/lib/os-release":
			b, _ := io.ReadAll(r)
			osName = osReleaseName(b)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	for _, v := range []string{fromDpkg, fromBanner, fromName} {
		if v != "" {
			return v, nil
		}
	}
	what := "the image"
	if osName != "" {
		what += " (" + osName + ")"
	}
	return "", fmt.Errorf("%s has no glibc: no libc6 in var/lib/dpkg/status or status.d, and no libc.so.6 with a release banner; nginx-forge's binaries need a glibc-based runtime base such as gcr.io/distroless/base-nossl-debian13", what)
}

// dpkgGlibcVersion returns the upstream version (major.minor) of the libc6 stanza in a dpkg
// status file, or "" when there is none or it is not installed.
func dpkgGlibcVersion(status []byte) string {
	for _, d := range parseDpkgStatus(status, "") {
		if !glibcPackages[d.name] {
			continue
		}
		if v := upstreamMajorMinor(d.version); v != "" {
			return v
		}
	}
	return ""
}

// upstreamMajorMinor turns a Debian version such as "2.39-0ubuntu8.3" or "1:2.41-12" into
// "2.39" / "2.41".
func upstreamMajorMinor(debVersion string) string {
	v := debVersion
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after // epoch
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[:i] // Debian revision
	}
	return majorMinorRE.FindString(v)
}

func osReleaseName(b []byte) string {
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// CompareGlibc returns an error when the runtime's glibc (e.g. "2.36") is older than the
// builder's (e.g. "2.39"): binaries linked on the builder may require symbol versions up to
// the builder's glibc, which the runtime lacks.
func CompareGlibc(builder, runtime string) error {
	b, err := parseGlibc(builder)
	if err != nil {
		return fmt.Errorf("builder glibc version: %w", err)
	}
	r, err := parseGlibc(runtime)
	if err != nil {
		return fmt.Errorf("runtime glibc version: %w", err)
	}
	if r[0] > b[0] || r[0] == b[0] && r[1] >= b[1] {
		return nil
	}
	return fmt.Errorf("runtime base has glibc %s, older than the builder's %s: binaries built there need symbols up to GLIBC_%s (nginx needs GLIBC_2.38 on a 2.39 builder) and will not start; use a runtime base with glibc >= %s (a -debian13 distroless image) or an older builder",
		runtime, builder, builder, builder)
}

func parseGlibc(v string) ([2]int, error) {
	maj, min, ok := strings.Cut(v, ".")
	a, err1 := strconv.Atoi(maj)
	b, err2 := strconv.Atoi(min)
	if !ok || err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("%q is not a major.minor glibc version", v)
	}
	return [2]int{a, b}, nil
}
