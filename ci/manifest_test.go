package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/image"
)

func pushPlatform(t *testing.T, repo, arch string) string {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref, _ := name.NewDigest(repo + "@" + d.String())
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func runManifestCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"manifest"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestManifestCommand(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nginx-forge"
	amd := pushPlatform(t, repo, "amd64")
	arm := pushPlatform(t, repo, "arm64")

	// Dry run: prints the index, writes nothing.
	code, out, errs := runManifestCmd(t, "--image", repo+":1.26.3,latest", "--dry-run", amd, repo+"@"+arm)
	if code != 0 || !strings.Contains(out, `"architecture": "arm64"`) || !strings.Contains(out, "nothing written") {
		t.Fatalf("dry run: code %d\n%s\n%s", code, out, errs)
	}
	if _, err := remote.Head(mustTagRef(t, repo+":latest")); err == nil {
		t.Fatal("dry run created the tag")
	}

	code, out, errs = runManifestCmd(t, "--image", repo+":1.26.3,latest", amd, arm)
	if code != 0 {
		t.Fatalf("code %d: %s", code, errs)
	}
	idx, err := remote.Index(mustTagRef(t, repo+":latest"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	if strings.TrimSpace(out) != repo+"@"+d.String() {
		t.Errorf("printed %q, tag latest is %s", out, d)
	}
	im, _ := idx.IndexManifest()
	if len(im.Manifests) != 2 || im.Manifests[0].Platform.Architecture != "amd64" {
		t.Errorf("index %+v", im.Manifests)
	}

	for _, bad := range [][]string{
		{amd}, // no --image
		{"--image", repo, "--ref", "refs/heads/feature", amd}, // no tag given and none decided
		{"--image", repo + ":x"},                              // no digests
		{"--image", repo + ":x", "latest"},                    // not a digest
	} {
		if code, _, errs := runManifestCmd(t, bad...); code != 2 {
			t.Errorf("manifest %v: exit %d (want 2): %s", bad, code, errs)
		}
	}
}

func mustTagRef(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}

// One tag rule: for the same lock, ref and revision, the CI join (ci manifest --image REPO)
// moves exactly the tags ci build --push would, in the same order.
func TestBuildAndManifestDecideTheSameTags(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nginx-forge"
	amd := pushPlatform(t, repo, "amd64")
	lockFile := "../pipeline/lock/testdata/stack.twin.lock.json"
	l, _, err := forge.LoadLock(lockFile)
	if err != nil {
		t.Fatal(err)
	}
	const sha = "89abcdef0123456789abcdef0123456789abcdef"
	for _, ref := range []string{"refs/heads/main", "refs/tags/v1.4.0", ""} {
		args := []string{"--push", "--image", repo, "--lock", lockFile, "--ref", ref, "--revision", sha}
		fs := flag.NewFlagSet("build", flag.ContinueOnError)
		f := declareBuildFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		req, err := f.request()
		if err != nil {
			t.Fatal(err)
		}
		fromBuild := image.Tags(l, req.TagEvent())
		code, out, errs := runManifestCmd(t, "--image", repo, "--lock", lockFile, "--ref", ref, "--revision", sha, "--dry-run", amd)
		if code != 0 {
			t.Fatalf("manifest --ref %q: exit %d: %s", ref, code, errs)
		}
		want := "move tags " + strings.Join(fromBuild, ", ") + ";"
		if !strings.Contains(out, want) {
			t.Errorf("--ref %q: build moves %v; manifest says:\n%s", ref, fromBuild, out)
		}
		// build.yml's merge job names the index's tags with ci tags.
		var tout, terr bytes.Buffer
		if code := run(context.Background(), []string{"tags", "--lock", lockFile, "--ref", ref, "--revision", sha}, &tout, &terr); code != 0 ||
			strings.TrimSpace(tout.String()) != strings.Join(fromBuild, ",") {
			t.Errorf("--ref %q: ci tags printed %q (exit %d, %s); build moves %v", ref, tout.String(), code, terr.String(), fromBuild)
		}
		if ref != "" && !slices.Contains(fromBuild, "latest") {
			t.Errorf("--ref %q: %v lacks latest", ref, fromBuild)
		}
	}
}

// pushPlatformWithSBOM pushes a random image of arch by digest with an SPDX document
// attached as its referrer, as ci build --push --digest-only does, and returns its digest
// and the document.
func pushPlatformWithSBOM(t *testing.T, repo, arch string) (string, []byte) {
	t.Helper()
	img, err := random.Image(256, 1)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	doc := []byte(`{"spdxVersion":"SPDX-2.3","SPDXID":"SPDXRef-DOCUMENT","name":"stand-in ` + arch + `"}`)
	pub, err := image.Publish(context.Background(), img, repo, nil, image.WithSBOM(doc, time.Unix(1740355200, 0).UTC()))
	if err != nil {
		t.Fatal(err)
	}
	return pub.Digest.DigestStr(), doc
}

// signKeyFile writes a new P-256 key as an unencrypted PKCS#8 PEM (what the README's
// `openssl genpkey` writes), for --sign-key.
func signKeyFile(t *testing.T) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "key.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// canonicalJSON is b re-encoded with sorted keys and no space: a predicate travels as a
// protobuf Struct, which keeps the document but not its key order.
func canonicalJSON(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// attestedPredicates are the predicates of the in-toto statements in the attestation
// manifest of ref (REPO:sha256-<hex>.att), as cosign stores them.
func attestedPredicates(t *testing.T, repo string, d string) []string {
	t.Helper()
	att, err := remote.Image(mustTagRef(t, repo+":"+strings.Replace(d, ":", "-", 1)+".att"))
	if err != nil {
		t.Fatalf("the attestations of %s: %v", d, err)
	}
	layers, err := att.Layers()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ Payload []byte }
		var st struct {
			PredicateType string          `json:"predicateType"`
			Predicate     json.RawMessage `json:"predicate"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			t.Fatalf("attestation layer of %s: %v", d, err)
		}
		if err := json.Unmarshal(env.Payload, &st); err != nil {
			t.Fatalf("attestation statement of %s: %v", d, err)
		}
		out = append(out, st.PredicateType+" "+canonicalJSON(t, st.Predicate))
	}
	slices.Sort(out)
	return out
}

// ci manifest --sign-key, through the command line: the index is pushed, signed (its .sig)
// and attested with each platform's attached SBOM (its .att) before the tags move, and the
// log says so. A platform image without an SBOM is refused at the sign step with no tag
// moved; a key that cannot sign is refused before anything is pushed. (The real cosign
// verifies such an index in the integration tier: TestManifestSignKeyVerifiedByCosign.)
func TestManifestSignKey(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repo := strings.TrimPrefix(srv.URL, "http://") + "/nginx-forge"
	amd, amdSBOM := pushPlatformWithSBOM(t, repo, "amd64")
	arm, armSBOM := pushPlatformWithSBOM(t, repo, "arm64")
	key := signKeyFile(t)

	code, out, errs := runManifestCmd(t, "--image", repo+":1.26.3,latest", "--sign-key", key, amd, arm)
	if code != 0 {
		t.Fatalf("manifest --sign-key: exit %d\n%s", code, errs)
	}
	idx, err := remote.Index(mustTagRef(t, repo+":latest"))
	if err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	if strings.TrimSpace(out) != repo+"@"+d.String() {
		t.Fatalf("printed %q, tag latest is %s", out, d)
	}
	if !strings.Contains(errs, "push: signed "+d.String()+" (signature sha256:") || !strings.Contains(errs, "; SBOM attestations sha256:") {
		t.Errorf("the log does not say the index was signed and attested:\n%s", errs)
	}
	sig := mustTagRef(t, repo+":"+strings.Replace(d.String(), ":", "-", 1)+".sig")
	if _, err := remote.Head(sig); err != nil {
		t.Errorf("no signature of the index at %s: %v", sig, err)
	}
	want := []string{"https://spdx.dev/Document " + canonicalJSON(t, amdSBOM), "https://spdx.dev/Document " + canonicalJSON(t, armSBOM)}
	slices.Sort(want)
	if got := attestedPredicates(t, repo, d.String()); !slices.Equal(got, want) {
		t.Errorf("the index's attestations are %q, want each platform's SBOM %q", got, want)
	}

	// A platform image with no SBOM: refused at signing, no tag moved (the pushed-by-digest
	// index stays untagged).
	bare := pushPlatform(t, repo, "arm64")
	code, _, errs = runManifestCmd(t, "--image", repo+":unsigned", "--sign-key", key, amd, bare)
	if code == 0 || !strings.Contains(errs, "has no SBOM attached") || !strings.Contains(errs, "push it with `ci build --push`") {
		t.Errorf("manifest --sign-key with an image without SBOM: exit %d\n%s", code, errs)
	}
	if _, err := remote.Head(mustTagRef(t, repo+":unsigned")); err == nil {
		t.Error("the tag unsigned moved to an index that could not be attested")
	}

	// A key that cannot sign: refused naming the flag, before the index is pushed (and in a
	// dry run too).
	t.Setenv("COSIGN_PASSWORD", "")
	os.Unsetenv("COSIGN_PASSWORD")
	enc := filepath.Join(t.TempDir(), "cosign.key")
	if err := os.WriteFile(enc, []byte("-----BEGIN ENCRYPTED SIGSTORE PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED SIGSTORE PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{nil, {"--dry-run"}} {
		args := append(append([]string{"--image", repo + ":badkey", "--sign-key", enc}, extra...), amd, arm)
		code, _, errs = runManifestCmd(t, args...)
		if code == 0 || !strings.Contains(errs, "--sign-key "+enc+" is an encrypted key") {
			t.Errorf("manifest %v: exit %d\n%s", args, code, errs)
		}
	}
	if _, err := remote.Head(mustTagRef(t, repo+":badkey")); err == nil {
		t.Error("the tag badkey moved although the key cannot sign")
	}
}
