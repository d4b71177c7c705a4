//go:build integration

package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/engine/host"
	"github.com/nginx-forge/nginx-forge/pipeline/smoke"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/basetest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// pushTwoPlatformBase pushes the stand-in distroless base as an index of linux/amd64
// (Docker-typed, as the lab's own) and linux/arm64/v8 (Debian trixie's arm64 packages): the
// lab's stand-ins are amd64 only, and a two-platform build takes each platform's base from
// one --runtime-image.
func pushTwoPlatformBase(t *testing.T, regHost string) name.Digest {
	t.Helper()
	amd64 := basetest.DockerTypedFor(t, basetest.Options{})
	arm64, _ := basetest.For(t, basetest.Options{Arch: "arm64"})
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm64, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}}},
	)
	ref, err := name.ParseReference(regHost + "/distroless/base-nossl-debian13:two-platform")
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatalf("pushing the two-platform stand-in base: %v", err)
	}
	d, err := idx.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return ref.Context().Digest(d.String())
}

// TestDaggerTwoPlatformPush is issue 37's acceptance on the Dagger lab: `ci build --platform
// linux/amd64,linux/arm64 --push` builds each platform in the engine, the arm64 one
// cross-compiled by an amd64 builder (only nginx's configure tests run under qemu), smoke-tests
// both in the engine (the arm64 image under emulation: every check, none skipped), pushes
// them and then the index; the index holds exactly the two platforms, and each image
// passes `ci smoke --image` here under runc.
func TestDaggerTwoPlatformPush(t *testing.T) {
	needDaggerEngine(t)
	mirror := testenv.Mirror(t)
	needHostSmoke(t)
	if err := host.EmulationReady("qemu-aarch64"); err != nil {
		testenv.Missing(t, "arm64 emulation ("+err.Error()+")", "run .ci/install-deps as root")
	}
	reg := registrytest.Start(t)
	base := pushTwoPlatformBase(t, reg.Host)
	repo := reg.Host + "/nginx-forge/two-platform"
	ctx, cancel := context.WithTimeout(context.Background(), 80*time.Minute)
	defer cancel()

	args := []string{"build", "--lock", testLockPath, "--mirror", mirror, "--platform", "linux/amd64,linux/arm64",
		"--runtime-image", base.String(), "--push", "--image", repo, "-v"}
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(ctx, args, &stdout, &stderr)
	took := time.Since(start)
	log := stderr.String()
	if code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(args, " "), code, log)
	}
	t.Logf("ci %s took %s", strings.Join(args, " "), took.Round(time.Second))
	logAtEnd(t, "its log", log)
	for _, pl := range []string{"linux/amd64", "linux/arm64"} {
		checkAllSmoke(t, log, pl)
	}
	for _, want := range []string{"dagger: cross-compiling for linux/arm64 on a linux/amd64 builder", "binary: architecture"} {
		if !strings.Contains(log, want) {
			t.Errorf("the build log lacks %q", want)
		}
	}
	if !regexp.MustCompile(`(?m)^openssl \(linux/arm64\): done in`).MatchString(log) {
		t.Errorf("no progress line for the arm64 OpenSSL stage")
	}

	idxRef, err := name.NewDigest(digestRef(t, stdout.String()+log))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(idxRef)
	if err != nil {
		t.Fatalf("%s is not an index: %v", idxRef, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]name.Digest{}
	for _, m := range im.Manifests {
		if m.Platform == nil {
			t.Errorf("index entry %s has no platform", m.Digest)
			continue
		}
		got[m.Platform.String()] = idxRef.Context().Digest(m.Digest.String())
	}
	if len(got) != 2 || got["linux/amd64"].DigestStr() == "" || got["linux/arm64/v8"].DigestStr() == "" {
		t.Fatalf("the index %s holds %v, want exactly linux/amd64 and linux/arm64/v8", idxRef, got)
	}
	checkAArch64(t, got["linux/arm64/v8"])
	for pl, d := range got {
		checkPlatformSBOM(t, d, strings.Split(pl, "/")[1])
	}

	// Each platform's image as a user checks it: ci smoke --image by digest, under runc here
	// (the arm64 one under qemu).
	for pl, d := range got {
		var sout, serr bytes.Buffer
		if code := run(ctx, []string{"smoke", "--image", d.String()}, &sout, &serr); code != 0 {
			t.Errorf("ci smoke --image %s (%s): exit %d\n%s%s", d, pl, code, sout.String(), serr.String())
		} else if !regexp.MustCompile(`(?m)^` + strconv.Itoa(len(smoke.Checks())) + ` passed, 0 failed, 0 skipped`).MatchString(sout.String() + serr.String()) {
			t.Errorf("ci smoke --image %s (%s) did not pass every check:\n%s%s", d, pl, sout.String(), serr.String())
		} else {
			t.Logf("ci smoke --image %s (%s): all %d checks passed", d, pl, len(smoke.Checks()))
		}
	}
}

// checkPlatformSBOM reads the SBOM attached to one platform's image (its only referrer) and
// wants it to describe that image: the base's Debian packages of arch, none of another.
func checkPlatformSBOM(t *testing.T, d name.Digest, arch string) {
	t.Helper()
	refs, err := remote.Referrers(d)
	if err != nil {
		t.Fatalf("referrers of %s: %v", d, err)
	}
	rm, err := refs.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(rm.Manifests) != 1 {
		t.Fatalf("referrers of %s: %+v, want its SBOM only", d, rm.Manifests)
	}
	art, err := remote.Image(d.Context().Digest(rm.Manifests[0].Digest.String()))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := art.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("the SBOM artifact of %s: %d layers, %v", d, len(layers), err)
	}
	rc, err := layers[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var doc bytes.Buffer
	if _, err := doc.ReadFrom(rc); err != nil {
		t.Fatal(err)
	}
	other := map[string]string{"amd64": "arm64", "arm64": "amd64"}[arch]
	if !strings.Contains(doc.String(), "arch="+arch) || strings.Contains(doc.String(), "arch="+other) {
		t.Errorf("the SBOM of %s (%s) does not describe its own platform's packages: arch=%s %v, arch=%s %v",
			d, arch, arch, strings.Contains(doc.String(), "arch="+arch), other, strings.Contains(doc.String(), "arch="+other))
	} else {
		t.Logf("the SBOM of %s names %s packages only", d, arch)
	}
}
