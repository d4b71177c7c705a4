package forge

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/sign"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// An image the build read is named in the provenance as the SBOM names the base: the purl of
// the OCI image by the digest pulled (image.OCIPurl), whether the reference has a tag, a
// digest or both; an image read from a file here by its digest alone; the host engine's
// machine toolchain not at all.
func TestImageDependencyIsTheSBOMsPurl(t *testing.T) {
	hex := strings.Repeat("cd", 32)
	digest := "sha256:" + hex
	for _, tc := range []struct{ ref, uri string }{
		{"gcr.io/distroless/base-nossl-debian13:nonroot", "pkg:oci/base-nossl-debian13@sha256:" + hex + "?repository_url=gcr.io%2Fdistroless%2Fbase-nossl-debian13"},
		{"docker.io/library/ubuntu:24.04@sha256:" + hex, "pkg:oci/ubuntu@sha256:" + hex + "?repository_url=docker.io%2Flibrary%2Fubuntu"},
		{"127.0.0.1:5000/mirror/ubuntu", "pkg:oci/ubuntu@sha256:" + hex + "?repository_url=127.0.0.1%3A5000%2Fmirror%2Fubuntu"},
		{"oci:/tmp/base", ""},
		{"docker-archive:/tmp/base.tar", ""},
	} {
		if got, want := imageDependency(tc.ref, digest), (sign.Dependency{URI: tc.uri, Digest: digest}); got != want {
			t.Errorf("%s: %+v, want %+v", tc.ref, got, want)
		}
	}
	pulled := "docker.io/library/ubuntu:24.04@" + digest
	if got, want := builderDependency(pulled), imageDependency("docker.io/library/ubuntu:24.04", digest); got != want {
		t.Errorf("builder %s: %+v, want %+v", pulled, got, want)
	}
	if got := builderDependency(""); got != (sign.Dependency{}) {
		t.Errorf("no builder image (the host engine): %+v, want none", got)
	}
}

// The provenance states the lock as pinned: every component by name and version, the
// images as pinned, a git source by repository, tag and commit (no URL or SHA-256 to
// confuse it with a tarball), a tarball by URL and SHA-256. The AWS-LC lock has both kinds.
func TestProvenanceReadsTheLockAsPinned(t *testing.T) {
	l, err := lock.Load(filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "aws-lc.lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := provenanceLock(l)
	if p.SourceDateEpoch != l.SourceDateEpoch || p.BuilderImage != l.Images.Builder.Pinned() || p.RuntimeImage != l.Images.Runtime.Pinned() || p.BuilderImage == "" {
		t.Errorf("lock parameters %+v, want the lock's source date and pinned images", p)
	}
	if p.BuilderSnapshot != l.Images.Builder.Snapshot || p.BuilderSnapshot == "" {
		t.Errorf("lock parameters %+v, want the builder's archive snapshot %q (the shipped lock pins one)", p, l.Images.Builder.Snapshot)
	}
	// --builder-image names another copy of the builder; the lock's snapshot stays.
	over := *l
	if err := overrideImage(&over.Images.Builder, "127.0.0.1:5000/mirror/ubuntu:24.04@sha256:"+strings.Repeat("ab", 32)); err != nil {
		t.Fatal(err)
	}
	if over.Images.Builder.Snapshot != l.Images.Builder.Snapshot || over.Images.Builder.Digest != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("builder after --builder-image: %+v, want the new digest and the lock's snapshot %s", over.Images.Builder, l.Images.Builder.Snapshot)
	}
	if len(p.Components) != len(l.Components) {
		t.Fatalf("%d components stated, the lock has %d", len(p.Components), len(l.Components))
	}
	var git, tarball int
	for i, c := range l.Components {
		if p.Components[i] != (sign.NameVersion{Name: c.Name, Version: c.Version}) {
			t.Errorf("component %d stated as %+v, want %s %s", i, p.Components[i], c.Name, c.Version)
		}
		src := provenanceSource(c)
		switch {
		case c.Git != nil:
			git++
			if want := (sign.Source{Name: c.Name, URL: c.URL, SHA256: c.SHA256, GitRepository: c.Git.Repository, GitTag: c.Git.Tag, GitCommit: c.Git.Commit}); src != want || src.GitCommit == "" {
				t.Errorf("git source %s: %+v, want %+v", c.Name, src, want)
			}
		default:
			tarball++
			if want := (sign.Source{Name: c.Name, URL: c.URL, SHA256: c.SHA256}); src != want || src.SHA256 == "" {
				t.Errorf("tarball %s: %+v, want %+v", c.Name, src, want)
			}
		}
	}
	if git == 0 || tarball == 0 {
		t.Errorf("the AWS-LC lock gave %d git and %d tarball sources: both kinds must be checked", git, tarball)
	}
}
