package sign

import (
	"bytes"
	"cmp"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func cmpOr(a, b string) string { return cmp.Or(a, b) }

// forkOrigin is a fork's build in GitHub Actions: what ci reads out of the runner's
// environment for acme/edge-nginx's build.yml on main.
var forkOrigin = Origin{
	BuilderID:  "https://github.com/acme/edge-nginx/.github/workflows/build.yml@refs/heads/main",
	Repository: "https://github.com/acme/edge-nginx",
	Ref:        "refs/heads/main",
	Revision:   "0123456789abcdef0123456789abcdef01234567",
}

// goldenBuild is a fixed build (not read from a shipped lock, which the scheduled update
// moves): a tarball and a git source, a base and a builder image.
func goldenBuild() Build {
	return Build{
		Lock: LockParams{SourceDateEpoch: 1740355200, Components: []NameVersion{{"nginx", "1.30.6"}, {"aws_lc", "5.5.0"}},
			BuilderImage: "docker.io/library/ubuntu:24.04@sha256:" + strings.Repeat("ef", 32), RuntimeImage: "gcr.io/distroless/base-nossl-debian13:nonroot@sha256:" + strings.Repeat("ab", 32)},
		Engine: "dagger",
		Platforms: []PlatformBuild{{
			Platform: "linux/amd64", CPU: "x86-64-v3", Optimize: "lto", Modules: []string{"http_v3"},
			Sources: []Source{
				{Name: "aws_lc", GitRepository: "https://github.com/aws/aws-lc.git", GitTag: "v5.5.0", GitCommit: strings.Repeat("12", 20)},
				{Name: "nginx", URL: "https://nginx.org/download/nginx-1.30.6.tar.gz", SHA256: strings.Repeat("34", 32)},
			},
			Base: Dependency{
				URI:    "pkg:oci/base-nossl-debian13@sha256:" + strings.Repeat("ab", 32) + "?repository_url=gcr.io%2Fdistroless%2Fbase-nossl-debian13",
				Digest: "sha256:" + strings.Repeat("ab", 32),
			},
			Builder: Dependency{
				URI:    "pkg:oci/ubuntu@sha256:" + strings.Repeat("ef", 32) + "?repository_url=docker.io%2Flibrary%2Fubuntu",
				Digest: "sha256:" + strings.Repeat("ef", 32),
			},
		}},
	}
}

// predicateJSON is b's provenance predicate, indented, with builder.version (the test
// binary's own build information) left out, so it can be a golden file.
func predicateJSON(t *testing.T, b Build) []byte {
	t.Helper()
	a, err := provenancePredicate(b)
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(a.Predicate, &p); err != nil {
		t.Fatal(err)
	}
	delete(p["runDetails"].(map[string]any)["builder"].(map[string]any), "version")
	out, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// TestProvenanceGolden pins the provenance's shape for a fork's build: the builder is the
// fork's workflow, the source parameter names the fork's repository and ref, and the
// revision is the first resolved dependency, git+REPOSITORY@REF by gitCommit, as SLSA v1's
// own example records a git source. Regenerate with `go test ./pipeline/sign -update` and
// review the diff.
func TestProvenanceGolden(t *testing.T) {
	b := goldenBuild()
	b.Origin = forkOrigin
	got := predicateJSON(t, b)
	p := filepath.Join("testdata", "provenance.golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading golden file (regenerate with `go test ./pipeline/sign -update`): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s drifted (if intended, regenerate with `go test ./pipeline/sign -update`)\n--- got ---\n%s\n--- want ---\n%s", p, got, want)
	}
	for _, w := range []string{
		`"id": "https://github.com/acme/edge-nginx/.github/workflows/build.yml@refs/heads/main"`,
		`"repository": "https://github.com/acme/edge-nginx"`,
		`"uri": "git+https://github.com/acme/edge-nginx@refs/heads/main"`,
		`"gitCommit": "0123456789abcdef0123456789abcdef01234567"`,
	} {
		if !bytes.Contains(got, []byte(w)) {
			t.Errorf("the provenance lacks %s", w)
		}
	}
}

// With nothing known of where it ran, the provenance names no repository: not this
// project's (it used to, for every build), and no source parameter or dependency; a
// revision alone is recorded by its commit.
func TestProvenanceWithoutOrigin(t *testing.T) {
	b := testBuild(t)
	got := string(predicateJSON(t, b))
	if strings.Contains(got, "github.com/nginx-forge/nginx-forge/ci\"") || strings.Contains(got, `"source"`) {
		t.Errorf("a build with no origin names a repository or a source:\n%s", got)
	}
	if !strings.Contains(got, `"id": "`+unnamedBuilderID+`"`) {
		t.Errorf("builder id is not %s:\n%s", unnamedBuilderID, got)
	}
	b.Origin = Origin{Revision: forkOrigin.Revision}
	got = string(predicateJSON(t, b))
	if !strings.Contains(got, `"name": "source"`) || !strings.Contains(got, `"gitCommit": "`+forkOrigin.Revision+`"`) || strings.Contains(got, `"uri": "git+"`) {
		t.Errorf("a revision without a repository is not recorded by its commit alone:\n%s", got)
	}
}
