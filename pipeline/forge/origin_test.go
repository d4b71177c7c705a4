package forge_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
)

const forkRevision = "0123456789abcdef0123456789abcdef01234567"

// forkOrigin is what ci reads in a fork's GitHub Actions run of build.yml on main.
var forkOrigin = forge.Origin{
	Repository: "https://github.com/acme/edge-nginx",
	BuilderID:  "https://github.com/acme/edge-nginx/.github/workflows/build.yml@refs/heads/main",
	Ref:        "refs/heads/main",
}

// A key-signed push of a fork's build: the pushed image's source label and annotation name
// the fork's repository, and its provenance names the fork's workflow as builder, the
// repository and ref as its source, and the revision as a git dependency.
func TestForkOriginInLabelAndProvenance(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	req := w.request(dir)
	req.Origin, req.Revision = forkOrigin, forkRevision
	req.SignKey = writeKey(t, dir)
	res, err := runBuild(&fakeEngine{j: w.j}, req)
	if err != nil {
		t.Fatal(err)
	}
	ref := res.Published.Digest
	label, ann := sourceOf(t, ref)
	if label != forkOrigin.Repository || ann != forkOrigin.Repository {
		t.Errorf("source label %q, annotation %q; want %s", label, ann, forkOrigin.Repository)
	}
	p := provenanceOf(t, ref)
	if p.RunDetails.Builder.ID != forkOrigin.BuilderID {
		t.Errorf("builder id %q, want %q", p.RunDetails.Builder.ID, forkOrigin.BuilderID)
	}
	if src := p.BuildDefinition.ExternalParameters.Source; src.Repository != forkOrigin.Repository || src.Ref != forkOrigin.Ref {
		t.Errorf("source parameter %+v, want %s at %s", src, forkOrigin.Repository, forkOrigin.Ref)
	}
	deps := p.BuildDefinition.ResolvedDependencies
	if len(deps) == 0 || deps[0].URI != "git+https://github.com/acme/edge-nginx@refs/heads/main" || deps[0].Digest["gitCommit"] != forkRevision {
		t.Errorf("first resolved dependency %+v, want the fork's revision", deps[:min(1, len(deps))])
	}
}

// With no origin the image has no source label and the provenance names no repository.
func TestNoOriginNoLabel(t *testing.T) {
	w := newWorld(t)
	dir := t.TempDir()
	req := w.request(dir)
	req.SignKey = writeKey(t, dir)
	res, err := runBuild(&fakeEngine{j: w.j}, req)
	if err != nil {
		t.Fatal(err)
	}
	ref := res.Published.Digest
	if label, ann := sourceOf(t, ref); label != "" || ann != "" {
		t.Errorf("no origin, yet source label %q, annotation %q", label, ann)
	}
	p := provenanceOf(t, ref)
	if strings.Contains(p.RunDetails.Builder.ID, "github.com") || p.BuildDefinition.ExternalParameters.Source.Repository != "" {
		t.Errorf("no origin, yet the provenance names a repository: %+v", p)
	}
}

// An origin that would write a credential is refused before anything is fetched.
func TestOriginWithCredentialsRefused(t *testing.T) {
	w := newWorld(t)
	req := w.request(t.TempDir())
	req.Origin.Repository = "https://x-access-token:ghs_SECRET@github.com/acme/edge-nginx"
	_, err := req.Resolve()
	if err == nil || strings.Contains(err.Error(), "ghs_SECRET") || !strings.Contains(err.Error(), "credentials") {
		t.Errorf("Resolve: %v", err)
	}
}

func writeKey(t *testing.T, dir string) string {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	pemKey, _ := cryptoutils.MarshalPrivateKeyToPEM(priv)
	p := filepath.Join(dir, "key.pem")
	if err := os.WriteFile(p, pemKey, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// sourceOf is the pushed image's org.opencontainers.image.source label and annotation.
func sourceOf(t *testing.T, ref name.Digest) (label, annotation string) {
	t.Helper()
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	const k = "org.opencontainers.image.source"
	return cf.Config.Labels[k], m.Annotations[k]
}

type provenancePredicate struct {
	BuildDefinition struct {
		ExternalParameters struct {
			Source struct{ Repository, Ref string } `json:"source"`
		} `json:"externalParameters"`
		ResolvedDependencies []struct {
			URI    string            `json:"uri"`
			Digest map[string]string `json:"digest"`
		} `json:"resolvedDependencies"`
	} `json:"buildDefinition"`
	RunDetails struct {
		Builder struct {
			ID string `json:"id"`
		} `json:"builder"`
	} `json:"runDetails"`
}

// provenanceOf reads the SLSA provenance attested for ref (REPO:sha256-<hex>.att).
func provenanceOf(t *testing.T, ref name.Digest) provenancePredicate {
	t.Helper()
	h := strings.TrimPrefix(ref.DigestStr(), "sha256:")
	att, err := remote.Image(ref.Repository.Tag("sha256-" + h + ".att"))
	if err != nil {
		t.Fatalf("no attestations for %s: %v", ref, err)
	}
	m, _ := att.Manifest()
	for _, l := range m.Layers {
		if l.Annotations["predicateType"] != "https://slsa.dev/provenance/v1" {
			continue
		}
		layer, _ := att.LayerByDigest(l.Digest)
		rc, _ := layer.Compressed()
		raw, _ := io.ReadAll(rc)
		rc.Close()
		var env struct{ Payload string }
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatal(err)
		}
		body, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct{ Predicate provenancePredicate }
		if err := json.Unmarshal(body, &st); err != nil {
			t.Fatal(err)
		}
		return st.Predicate
	}
	t.Fatalf("no provenance among the attestations of %s", ref)
	return provenancePredicate{}
}
