package image

// The base image's Debian packages, for the SBOM: distroless images keep one dpkg control
// stanza per package under var/lib/dpkg/status.d/ (no dpkg binary, no single status file);
// Debian and Ubuntu images keep them all in var/lib/dpkg/status. Scanners match Debian's
// security tracker by these packages' purls (name, version, source package, distro), so they
// are read from the image itself rather than assumed from the base's name.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/package-url/packageurl-go"
	"github.com/spdx/tools-golang/spdx"
)

// debPackage is one installed Debian package of an image.
type debPackage struct {
	name, version, arch string
	// source and sourceVersion name the source package when it differs from the binary
	// package (libc6 is built from glibc): Debian's advisories are about source packages.
	source, sourceVersion string
	// file is where the stanza was read, for the SBOM's sourceInfo.
	file string
	// license is what the package's copyright file in the image says.
	license debLicense
}

// osRelease is the ID and VERSION_ID of the image's os-release ("debian", "13").
type osRelease struct{ id, versionID string }

// purl is pkg:deb/<id>/NAME@VERSION?arch=ARCH&distro=<id>-<version>&upstream=SOURCE, the
// form syft writes and grype and trivy read (distro picks the advisory feed, upstream the
// source package the advisory names).
func (d debPackage) purl(osr osRelease) string {
	ns := osr.id
	if ns == "" {
		ns = "debian" // a dpkg database without os-release: Debian is the honest default
	}
	q := map[string]string{}
	if d.arch != "" {
		q["arch"] = d.arch
	}
	if osr.id != "" && osr.versionID != "" {
		q["distro"] = osr.id + "-" + osr.versionID
	}
	if d.source != "" && d.source != d.name {
		q["upstream"] = d.source
		if d.sourceVersion != "" && d.sourceVersion != d.version {
			q["upstream"] += "@" + d.sourceVersion
		}
	}
	return packageurl.NewPackageURL(packageurl.TypeDebian, ns, d.name, d.version, packageurl.QualifiersFromMap(q), "").ToString()
}

// spdxIDChars are the characters an SPDX element ID may not hold (it allows letters,
// digits, '.' and '-'); Debian package names may hold '+' (libstdc++6).
var spdxIDChars = regexp.MustCompile(`[^A-Za-z0-9.-]`)

// debElementID is the package's SPDX ID, unique within used.
func debElementID(d debPackage, used map[spdx.ElementID]bool) spdx.ElementID {
	base := "Deb-" + spdxIDChars.ReplaceAllString(d.name, "-")
	if d.arch != "" {
		base += "-" + spdxIDChars.ReplaceAllString(d.arch, "-")
	}
	id := spdx.ElementID(base)
	for i := 2; used[id]; i++ {
		id = spdx.ElementID(fmt.Sprintf("%s-%d", base, i))
	}
	used[id] = true
	return id
}

// dpkgPackages reads the installed Debian packages and the os-release of img's root
// filesystem, sorted by name and architecture. An image without a dpkg database gives none.
func dpkgPackages(img v1.Image) ([]debPackage, osRelease, error) {
	var pkgs []debPackage
	var osr, etcOsr osRelease
	copyrights := map[string][]byte{}
	err := eachFile(img, func(p string, r io.Reader) error {
		if pkg, ok := isCopyrightFile(p); ok {
			b, err := readAll(p, r)
			if err != nil {
				return err
			}
			copyrights[pkg] = b
			return nil
		}
		switch {
		case isDpkgStatus(p):
			b, err := readAll(p, r)
			if err != nil {
				return err
			}
			pkgs = append(pkgs, parseDpkgStatus(b, p)...)
		case p == "etc/os-release" || p == "usr/lib/os-release":
			b, err := readAll(p, r)
			if err != nil {
				return err
			}
			if p == "etc/os-release" {
				etcOsr = parseOsRelease(b)
			} else {
				osr = parseOsRelease(b)
			}
		}
		return nil
	})
	if err != nil {
		return nil, osRelease{}, err
	}
	if etcOsr.id != "" { // etc/os-release, when a regular file, overrides usr/lib's
		osr = etcOsr
	}
	for i := range pkgs {
		pkgs[i].license = copyrightLicense(pkgs[i].name, copyrights[pkgs[i].name])
	}
	sort.Slice(pkgs, func(i, j int) bool {
		if pkgs[i].name != pkgs[j].name {
			return pkgs[i].name < pkgs[j].name
		}
		return pkgs[i].arch < pkgs[j].arch
	})
	return pkgs, osr, nil
}

// parseDpkgStatus returns the installed packages of a dpkg status file (or one status.d
// stanza file). A stanza with a Status field is kept only when installed (the status file
// also remembers removed packages whose configuration files remain); status.d stanzas have
// no Status field and are all installed.
func parseDpkgStatus(status []byte, file string) []debPackage {
	var out []debPackage
	for _, stanza := range bytes.Split(status, []byte("\n\n")) {
		fields := map[string]string{}
		sc := bufio.NewScanner(bytes.NewReader(stanza))
		sc.Buffer(make([]byte, 64*1024), len(stanza)+1)
		for sc.Scan() {
			line := sc.Text()
			if line == "" || line[0] == ' ' || line[0] == '\t' {
				continue // continuation lines (Description, Conffiles) carry nothing we need
			}
			if k, v, ok := strings.Cut(line, ":"); ok {
				fields[k] = strings.TrimSpace(v)
			}
		}
		if fields["Package"] == "" || fields["Version"] == "" {
			continue
		}
		if st := fields["Status"]; st != "" && !strings.HasSuffix(st, " installed") {
			continue
		}
		d := debPackage{name: fields["Package"], version: fields["Version"], arch: fields["Architecture"], file: file}
		// "Source: glibc" or "Source: glibc (2.41-12)" when the source version differs.
		if src := fields["Source"]; src != "" {
			name, ver, _ := strings.Cut(src, " ")
			d.source = name
			d.sourceVersion = strings.Trim(ver, "()")
		}
		out = append(out, d)
	}
	return out
}

func parseOsRelease(b []byte) osRelease {
	var r osRelease
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"'`)
		switch k {
		case "ID":
			r.id = v
		case "VERSION_ID":
			r.versionID = v
		}
	}
	return r
}

// debianUpstreamVersion is the upstream part of a Debian version: "1:4.4.33-2" -> "4.4.33".
func debianUpstreamVersion(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndex(v, "-"); i >= 0 {
		v = v[:i]
	}
	return v
}
