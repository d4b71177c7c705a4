package plan_test

import (
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// goList runs `go list -deps` of the smoke client's main for linux without cgo (how the
// engine builds it) and returns each dependency as "module<TAB>import path<TAB>dir".
func goList(t *testing.T) [][]string {
	t.Helper()
	goTool := testenv.Tool(t, "go", "golang")
	cmd := exec.Command(goTool, "list", "-deps", "-f", "{{if .Module}}{{.Module.Path}}\t{{.ImportPath}}\t{{.Dir}}{{end}}", "./"+plan.SmokeClientMain)
	cmd.Dir = testenv.RepoRoot()
	cmd.Env = append(os.Environ(), "GOOS=linux", "CGO_ENABLED=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			rows = append(rows, strings.Split(l, "\t"))
		}
	}
	return rows
}

// TestSmokeClientDeclaredInputs: the packages and modules the smoke client's build is
// declared to need are exactly what its main imports (go list -deps): nothing missing
// (the engine's build would fail offline) and nothing more (its cache key would change
// with code it does not use).
func TestSmokeClientDeclaredInputs(t *testing.T) {
	var pkgs, mods []string
	for _, r := range goList(t) {
		if r[0] == plan.SmokeClientModule {
			rel, err := filepath.Rel(testenv.RepoRoot(), r[2])
			if err != nil {
				t.Fatal(err)
			}
			pkgs = append(pkgs, filepath.ToSlash(rel))
		} else if !slices.Contains(mods, r[0]) {
			mods = append(mods, r[0])
		}
	}
	sort.Strings(pkgs)
	sort.Strings(mods)
	if want := slices.Sorted(slices.Values(plan.SmokeClientPackages)); !slices.Equal(pkgs, want) {
		t.Errorf("the client's packages in this module: go list says %q, plan.SmokeClientPackages %q", pkgs, want)
	}
	if want := slices.Sorted(slices.Values(plan.SmokeClientModules)); !slices.Equal(mods, want) {
		t.Errorf("the client's other modules: go list says %q, plan.SmokeClientModules %q", mods, want)
	}
}

// TestSmokeClientStep: the client is built for the plan's platform, statically, reproducibly,
// from the builder image, with the declared modules only (the build step is offline), from
// go.mod, go.sum and the declared packages' directories without tests or testdata.
func TestSmokeClientStep(t *testing.T) {
	l, err := lock.Load(testenv.TestLockPath())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(l, plan.WithPlatform(linuxARM64))
	if err != nil {
		t.Fatal(err)
	}
	b := p.SmokeClientStep()
	if b.Image != p.BuilderImage {
		t.Errorf("image %q, want the builder %q", b.Image, p.BuilderImage)
	}
	// A builder pinned in time: the client follows the builder's tag (it is never in the
	// image), and the build itself pulls the digest.
	pinned := *l
	pinned.Images.Builder.Digest = "sha256:" + strings.Repeat("1", 64)
	pinned.Images.Builder.Snapshot = "20261201T000000Z"
	pp, err := plan.New(&pinned, plan.WithPlatform(linuxARM64))
	if err != nil {
		t.Fatal(err)
	}
	if got := pp.SmokeClientStep().Image; got != l.Images.Builder.Ref || pp.BuilderImage != l.Images.Builder.Ref+"@"+pinned.Images.Builder.Digest {
		t.Errorf("pinned builder: smoke client image %q, want the tag %q; build image %q", got, l.Images.Builder.Ref, pp.BuilderImage)
	}
	env := map[string]string{}
	for _, v := range append(append([]plan.EnvVar(nil), b.Env...), b.BuildEnv...) {
		env[v.Name] = v.Value
	}
	for k, v := range map[string]string{"CGO_ENABLED": "0", "GOOS": "linux", "GOARCH": "arm64", "GOPROXY": "off", "GOTOOLCHAIN": "auto"} {
		if env[k] != v {
			t.Errorf("%s=%q, want %q", k, env[k], v)
		}
	}
	for _, want := range []string{"-trimpath", "-buildvcs=false", b.Out, "./" + plan.SmokeClientMain} {
		if !slices.Contains(b.Build, want) {
			t.Errorf("build argv %q lacks %s", b.Build, want)
		}
	}
	if !slices.Equal(b.Download[3:], plan.SmokeClientModules) {
		t.Errorf("download argv %q does not fetch exactly plan.SmokeClientModules", b.Download)
	}
	want := []string{"go.mod", "go.sum"}
	for _, d := range plan.SmokeClientPackages {
		want = append(want, d+"/**")
	}
	if !slices.Equal(b.Sources, want) || !slices.Equal(b.SourcesExcluded, []string{"**/*_test.go", "**/testdata"}) {
		t.Errorf("sources %q minus %q, want %q minus tests and testdata (what TestSmokeClientBuildsFromDeclaredSources copies)", b.Sources, b.SourcesExcluded, want)
	}
}

// TestSmokeClientBuildsFromDeclaredSources: a copy of only the files the engine's build step
// sees (go.mod, go.sum, the declared packages without tests and testdata) builds the client
// offline, with the modules already in this machine's module cache.
func TestSmokeClientBuildsFromDeclaredSources(t *testing.T) {
	goTool := testenv.Tool(t, "go", "golang")
	root, dst := testenv.RepoRoot(), t.TempDir()
	copyFile := func(rel string) {
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dst, rel)), 0o755)
		if err := os.WriteFile(filepath.Join(dst, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	copyFile("go.mod")
	copyFile("go.sum")
	for _, d := range plan.SmokeClientPackages {
		filepath.WalkDir(filepath.Join(root, d), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				t.Fatal(err)
			}
			if e.IsDir() && e.Name() == "testdata" {
				return filepath.SkipDir
			}
			if !e.IsDir() && !strings.HasSuffix(e.Name(), "_test.go") {
				rel, _ := filepath.Rel(root, p)
				copyFile(rel)
			}
			return nil
		})
	}
	out := filepath.Join(t.TempDir(), path.Base(plan.SmokeClientPath))
	cmd := exec.Command(goTool, "build", "-trimpath", "-o", out, "./"+plan.SmokeClientMain)
	cmd.Dir = dst
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0", "GOWORK=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the client from the declared sources alone: %v\n%s", err, b)
	}
}
