//go:build integration

package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// slsaBuilderDependencies reads the SLSA provenance attested to ref (REPO@sha256:...) from
// cosign's layout, REPO:sha256-<hex>.att, and returns its runDetails.builder's
// builderDependencies (the engine's builder images) and its internal parameters' toolchain
// (each platform's builder packages by name and version).
func slsaBuilderDependencies(t *testing.T, ref string) ([]struct {
	Name, URI string
	Digest    map[string]string
}, map[string]map[string]string) {
	t.Helper()
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	att, err := remote.Image(d.Context().Tag(strings.Replace(d.DigestStr(), ":", "-", 1) + ".att"))
	if err != nil {
		t.Fatalf("reading the attestations of %s: %v", ref, err)
	}
	layers, err := att.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ Payload string }
		if err := json.Unmarshal(raw, &env); err != nil {
			t.Fatalf("an attestation layer of %s is not a DSSE envelope: %v", ref, err)
		}
		payload, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			PredicateType string `json:"predicateType"`
			Predicate     struct {
				BuildDefinition struct {
					InternalParameters struct {
						Toolchain map[string]map[string]string `json:"toolchain"`
					} `json:"internalParameters"`
				} `json:"buildDefinition"`
				RunDetails struct {
					Builder struct {
						BuilderDependencies []struct {
							Name, URI string
							Digest    map[string]string
						} `json:"builderDependencies"`
					} `json:"builder"`
				} `json:"runDetails"`
			} `json:"predicate"`
		}
		if err := json.Unmarshal(payload, &st); err != nil {
			t.Fatal(err)
		}
		if st.PredicateType == "https://slsa.dev/provenance/v1" {
			return st.Predicate.RunDetails.Builder.BuilderDependencies, st.Predicate.BuildDefinition.InternalParameters.Toolchain
		}
	}
	t.Fatalf("%s has no SLSA provenance attestation", ref)
	return nil, nil
}
