//go:build integration

package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// rebuildOnTheCommandLine is `ci rebuild --key cosign.pub` of d, the image a signed push
// (signedPushOnTheCommandLine) published, typed as a verifier types it (main's own flag
// parsing). keyDir holds cosign.key, cosign.pub and other.pub; args are the flags the build
// was given that the provenance does not record (the lock, the mirror, the cache, the runtime
// image). The build recorded revision; the test's checkout stands in for a checkout at it.
//   - The same lock and flags rebuild d (from the shared build cache: this proves the
//     comparison and the attestation; a rebuild from an empty cache on another runner is the
//     workflow's) and, with --attest, cosign verify-attestation accepts the VSA.
//   - Refused before anything is built, exit 2: another key, another revision, another lock.
//   - A planted difference (an image like d with one file's mtime moved, attested with d's
//     provenance) exits 1 naming the digest the rebuild gave, the layer and the file.
func rebuildOnTheCommandLine(ctx context.Context, t *testing.T, keyDir string, args []string, d name.Digest, revision string, base name.Reference) {
	t.Helper()
	defer func(f func(context.Context) (string, error)) { rebuildCheckout = f }(rebuildCheckout)
	rebuildCheckout = func(context.Context) (string, error) { return revision, nil }
	rebuild := func(extra ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		// extra after args: a flag given twice takes its last value.
		full := append(append(append([]string{"rebuild"}, args...), extra...), d.String())
		code := run(ctx, full, &stdout, &stderr)
		t.Logf("ci %s: exit %d", strings.Join(full, " "), code)
		return code, stdout.String(), stderr.String()
	}
	pub := filepath.Join(keyDir, "cosign.pub")

	code, stdout, stderr := rebuild("--key", pub, "--attest", "--sign-key", filepath.Join(keyDir, "cosign.key"), "--runtime-image", base.String())
	if code != 0 || strings.TrimSpace(stdout) != d.String() || !strings.Contains(stderr, "rebuild: the same digest: "+d.DigestStr()) {
		t.Fatalf("rebuild of %s: exit %d, stdout %q\n%s", d, code, stdout, stderr)
	}
	cosign, err := exec.LookPath("cosign")
	if err != nil {
		testenv.Missing(t, "the command cosign", "run .ci/install-deps as root (it installs cosign v2.6.1 from the Go module proxy)")
	}
	cosignRun := testenv.CosignIn(ctx, cosign, keyDir)
	for _, key := range []string{"cosign.pub", "other.pub"} {
		out, err := cosignRun("verify-attestation", "--key", key, "--type", forge.RebuildPredicateType, "--insecure-ignore-tlog=true", d.String())
		switch {
		case key == "cosign.pub" && (err != nil || !strings.Contains(strings.Join(attestedSBOMs(t, out), "\n"), forge.RebuildMatched)):
			t.Errorf("cosign verify-attestation of the rebuild attestation: %v (want a predicate stating %s)\n%s", err, forge.RebuildMatched, out)
		case key == "other.pub" && err == nil:
			t.Errorf("cosign accepts the rebuild attestation under another key")
		}
	}

	refusals := []struct {
		extra []string
		want  string
	}{
		{[]string{"--key", filepath.Join(keyDir, "other.pub")}, "no SLSA provenance signed by this key"},
		{[]string{"--key", pub, "--lock", filepath.Join(testenv.RepoRoot(), "pipeline", "lock", "seed.lock.json")}, "refusing to rebuild"},
	}
	for _, r := range refusals {
		code, _, stderr := rebuild(append(r.extra, "--runtime-image", base.String())...)
		if code != 2 || !strings.Contains(stderr, r.want) || strings.Contains(stderr, "started") {
			t.Errorf("rebuild %s: exit %d, want 2 saying %q before anything started:\n%s", strings.Join(r.extra, " "), code, r.want, stderr)
		}
	}
	rebuildCheckout = func(context.Context) (string, error) { return strings.Repeat("ab", 20), nil }
	if code, _, stderr := rebuild("--key", pub, "--runtime-image", base.String()); code != 2 || !strings.Contains(stderr, "this checkout is at "+strings.Repeat("ab", 20)) {
		t.Errorf("rebuild from another revision: exit %d, want 2 naming both revisions:\n%s", code, stderr)
	}
	rebuildCheckout = func(context.Context) (string, error) { return revision, nil }

	// A planted non-determinism: the published image with one file's mtime a second later,
	// attested with the provenance of d (signed by the same key, with cosign itself), as a
	// build that stamped a time would have published it. Its rebuild gives d.
	planted, file := plantedImage(t, d)
	out, err := cosignRun("verify-attestation", "--key", "cosign.pub", "--type", "slsaprovenance1", "--insecure-ignore-tlog=true", d.String())
	preds := attestedSBOMs(t, out)
	if err != nil || len(preds) != 1 {
		t.Fatalf("reading the provenance of %s: %v (%d predicates)\n%s", d, err, len(preds), out)
	}
	predFile := filepath.Join(keyDir, "provenance.json")
	if err := os.WriteFile(predFile, []byte(preds[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := cosignRun("attest", "--key", "cosign.key", "--type", "slsaprovenance1", "--predicate", predFile, "--tlog-upload=false", "--yes", planted.String()); err != nil {
		t.Fatalf("cosign attest of the planted image: %v\n%s", err, out)
	}
	rebuildOf := func(target name.Digest, extra ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		full := append(append(append([]string{"rebuild"}, args...), extra...), target.String())
		code := run(ctx, full, &stdout, &stderr)
		return code, stderr.String()
	}
	code, stderr = rebuildOf(planted, "--key", pub, "--runtime-image", base.String())
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	t.Logf("rebuild of the planted image: exit %d: %s", code, lines[len(lines)-1])
	if code != 1 || !strings.Contains(stderr, "file "+file+": mtime differs") || !strings.Contains(stderr, d.DigestStr()) {
		t.Errorf("rebuild of an image with %s's mtime moved: exit %d, want 1 naming the rebuilt digest, the file and its mtime:\n%s", file, code, stderr)
	}
}

// plantedImage pushes the image at ref again, by digest into its repository, with one
// change: the first regular file of its last layer a second newer. It returns the new image
// and that file's path.
func plantedImage(t *testing.T, ref name.Digest) (name.Digest, string) {
	t.Helper()
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	last := layers[len(layers)-1]
	rc, err := last.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var buf bytes.Buffer
	tr, tw := tar.NewReader(rc), tar.NewWriter(&buf)
	file := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if file == "" && h.Typeflag == tar.TypeReg {
			file = "/" + strings.TrimPrefix(strings.TrimPrefix(h.Name, "./"), "/")
			h.ModTime = h.ModTime.Add(time.Second)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, tr); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	changed, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.RootFS.DiffIDs, cf.History = nil, nil
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out, err := mutate.ConfigFile(mutate.ConfigMediaType(mutate.MediaType(empty.Image, m.MediaType), m.Config.MediaType), cf)
	if err != nil {
		t.Fatal(err)
	}
	if out, err = mutate.AppendLayers(out, append(append([]v1.Layer{}, layers[:len(layers)-1]...), changed)...); err != nil {
		t.Fatal(err)
	}
	dg, err := out.Digest()
	if err != nil {
		t.Fatal(err)
	}
	planted, err := name.NewDigest(ref.Context().String() + "@" + dg.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(planted, out); err != nil {
		t.Fatal(err)
	}
	return planted, file
}
