//go:build integration

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/registrytest"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// TestManifestSignKeyVerifiedByCosign: `ci manifest --sign-key cosign.key` typed as
// build.yml's merge job types it (main's own flag parsing), against a registry process on
// loopback (distribution, no referrers API: each platform's SBOM is found under its fallback
// tag), with the key cosign generate-key-pair made and its COSIGN_PASSWORD. The real cosign,
// with cosign.pub and no transparency log, accepts the index's signature and its SBOM
// attestations, which are the two SBOMs attached to the platform images, and refuses both
// under another key.
func TestManifestSignKeyVerifiedByCosign(t *testing.T) {
	cosign, err := exec.LookPath("cosign")
	if err != nil {
		testenv.Missing(t, "the command cosign", "run .ci/install-deps as root (it installs cosign v2.6.1 from the Go module proxy)")
	}
	reg := registrytest.Start(t)
	repo := reg.Host + "/nginx-forge/nginx"
	amd, amdSBOM := pushPlatformWithSBOM(t, repo, "amd64")
	arm, armSBOM := pushPlatformWithSBOM(t, repo, "arm64")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "e2e password")
	cosignRun := testenv.CosignIn(ctx, cosign, dir)
	for _, prefix := range []string{"other", "cosign"} {
		if out, err := cosignRun("generate-key-pair", "--output-key-prefix", prefix); err != nil {
			t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
		}
	}

	code, out, errs := runManifestCmd(t, "--image", repo+":1.26.3,latest", "--sign-key", filepath.Join(dir, "cosign.key"), repo+"@"+amd, repo+"@"+arm)
	if code != 0 {
		t.Fatalf("ci manifest --sign-key: exit %d\n%s", code, errs)
	}
	index := strings.TrimSpace(out)
	d, err := remote.Head(mustTagRef(t, repo+":latest"))
	if err != nil {
		t.Fatal(err)
	}
	if index != repo+"@"+d.Digest.String() {
		t.Fatalf("ci manifest printed %q; latest is %s", index, d.Digest)
	}
	for _, c := range [][]string{{"verify"}, {"verify-attestation", "--type", "spdxjson"}} {
		for _, pub := range []string{"cosign.pub", "other.pub"} {
			args := append(append([]string{}, c...), "--key", pub, "--insecure-ignore-tlog=true", "--allow-insecure-registry", index)
			out, err := cosignRun(args...)
			t.Logf("cosign %s: exit %v: %s", strings.Join(args, " "), exitCode(err), lastLine(out))
			switch {
			case pub == "cosign.pub" && err != nil:
				t.Errorf("cosign %s refuses the signed index: %v\n%s", strings.Join(args, " "), err, out)
			case pub == "other.pub" && err == nil:
				t.Errorf("cosign %s accepts it under another key:\n%s", strings.Join(args, " "), out)
			case pub == "cosign.pub" && c[0] == "verify-attestation":
				want := []string{canonicalJSON(t, amdSBOM), canonicalJSON(t, armSBOM)}
				slices.Sort(want)
				if got := attestedSBOMs(t, out); !slices.Equal(got, want) {
					t.Errorf("cosign verify-attestation found the SBOMs %q, want the platform images' %q", got, want)
				}
			}
		}
	}
}

// attestedSBOMs are the predicates (canonicalJSON) of the envelopes cosign
// verify-attestation printed, one a line.
func attestedSBOMs(t *testing.T, out string) []string {
	t.Helper()
	var got []string
	for _, line := range strings.Split(out, "\n") {
		var env struct {
			Payload string `json:"payload"`
		}
		if json.Unmarshal([]byte(line), &env) != nil || env.Payload == "" {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(env.Payload)
		if err != nil {
			t.Fatal(err)
		}
		var st struct {
			Predicate json.RawMessage `json:"predicate"`
		}
		if err := json.Unmarshal(raw, &st); err != nil {
			t.Fatal(err)
		}
		got = append(got, canonicalJSON(t, st.Predicate))
	}
	slices.Sort(got)
	return got
}
