//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// signedPushOnTheCommandLine is `ci build --engine host --push --sign-key cosign.key` typed
// as the README types it (main's own flag parsing), with the key cosign generate-key-pair
// made and its COSIGN_PASSWORD, rebuilding what TestBuildPushEndToEnd built (args, from the
// warm cache: the same digest d). Then the real cosign, with cosign.pub and no transparency
// log, accepts the signature, the SBOM attestation (whose predicate is the SBOM the build
// wrote beside --output, sbomFile) and the provenance attestation, and refuses all three
// under another key.
func signedPushOnTheCommandLine(ctx context.Context, t *testing.T, args []string, d name.Digest, sbomFile string, rebuildArgs []string, revision string, base name.Reference) {
	t.Helper()
	cosign, err := exec.LookPath("cosign")
	if err != nil {
		testenv.Missing(t, "the command cosign", "run .ci/install-deps as root (it installs cosign v2.6.1 from the Go module proxy)")
	}
	dir := t.TempDir()
	t.Setenv("COSIGN_PASSWORD", "e2e password")
	cosignRun := testenv.CosignIn(ctx, cosign, dir)
	if out, err := cosignRun("generate-key-pair", "--output-key-prefix", "other"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}
	if out, err := cosignRun("generate-key-pair"); err != nil {
		t.Fatalf("cosign generate-key-pair: %v\n%s", err, out)
	}

	var stdout, stderr bytes.Buffer
	full := append(append([]string{}, args...), "--sign-key", filepath.Join(dir, "cosign.key"))
	if code := run(ctx, full, &stdout, &stderr); code != 0 {
		t.Fatalf("ci %s: exit %d\n%s", strings.Join(full, " "), code, stderr.String())
	}
	if got := strings.TrimSpace(stdout.String()); got != d.String() {
		t.Fatalf("the signed push printed %q, want the digest built before, %s", got, d)
	}
	if !strings.Contains(stderr.String(), "push: signed "+d.DigestStr()) {
		t.Errorf("the log does not say what was signed:\n%s", stderr.String())
	}
	checks := [][]string{{"verify"}, {"verify-attestation", "--type", "spdxjson"}, {"verify-attestation", "--type", "slsaprovenance1"}}
	for _, c := range checks {
		for _, pub := range []string{"cosign.pub", "other.pub"} {
			cmd := append(append([]string{}, c...), "--key", pub, "--insecure-ignore-tlog=true", d.String())
			out, err := cosignRun(cmd...)
			t.Logf("cosign %s: exit %v: %s", strings.Join(cmd, " "), exitCode(err), lastLine(out))
			switch {
			case pub == "cosign.pub" && err != nil:
				t.Errorf("cosign %s refuses the signed push: %v\n%s", strings.Join(cmd, " "), err, out)
			case pub == "other.pub" && err == nil:
				t.Errorf("cosign %s accepts it under another key:\n%s", strings.Join(cmd, " "), out)
			case pub == "cosign.pub" && c[len(c)-1] == "spdxjson":
				checkAttestedSBOM(t, out, sbomFile)
			}
		}
	}
	// Anyone with the checkout and cosign.pub: the same image again (issue 50).
	rebuildOnTheCommandLine(ctx, t, dir, rebuildArgs, d, revision, base)
}

// checkAttestedSBOM: an envelope cosign verify-attestation printed holds, as its statement's
// predicate, the SBOM document in sbomFile.
func checkAttestedSBOM(t *testing.T, out, sbomFile string) {
	t.Helper()
	want, err := os.ReadFile(sbomFile)
	if err != nil {
		t.Fatal(err)
	}
	got := attestedSBOMs(t, out)
	if len(got) == 0 {
		t.Errorf("cosign verify-attestation printed no envelope:\n%s", out)
		return
	}
	if !slices.Contains(got, canonicalJSON(t, want)) {
		t.Errorf("the attested SBOM is not the one the build wrote (%s)", sbomFile)
	}
}

// exitCode is err's exit status (0 for nil), for the log.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// lastLine is the last non-empty line of cosign's output (its verdict, or the envelope it
// verified), cut to 160 bytes for the log.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if l := lines[len(lines)-1]; len(l) > 160 {
		return l[:160] + "..."
	}
	return lines[len(lines)-1]
}
