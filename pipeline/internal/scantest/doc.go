// Package scantest proves the image's SBOM is what vulnerability scanners need: a test
// assembles an image on the stand-in distroless base (real Debian trixie packages), feeds the
// SBOM nginx-forge writes for it to grype, used as a library with a vulnerability database the
// test builds from planted advisories (grype's own database builder, from records in the
// formats of its NVD and Debian providers), and wants the planted OpenSSL and glibc
// vulnerabilities reported: OpenSSL by its CPE, libc6 by its pkg:deb purl (distro and source
// package).
//
// It is a module of its own so that grype's large dependency tree (cloud SDKs, SQLite, ...)
// stays out of nginx-forge's go.mod and out of `go test ./...` at the root, which does not
// descend into nested modules: .ci/test runs it explicitly. Its go.mod points
// github.com/nginx-forge/nginx-forge at this checkout (replace ../../..), so it always tests
// the SBOM code beside it.
package scantest
