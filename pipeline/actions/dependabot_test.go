package actions

import (
	"os"
	"path/filepath"
	"testing"

	yaml "go.yaml.in/yaml/v4"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// dependabotProblems: Dependabot proposes updates of the SHA-pinned actions (it keeps the SHA
// pin and rewrites its # vX.Y.Z comment) and of the Go modules, each weekly, from the
// repository's top directory (issue 36).
func dependabotProblems(raw []byte) []string {
	var cfg struct {
		Version int `yaml:"version"`
		Updates []struct {
			Ecosystem string `yaml:"package-ecosystem"`
			Directory string `yaml:"directory"`
			Schedule  struct {
				Interval string `yaml:"interval"`
			} `yaml:"schedule"`
		} `yaml:"updates"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return []string{"dependabot.yml: " + err.Error()}
	}
	var out []string
	if cfg.Version != 2 {
		out = append(out, "dependabot.yml: version is not 2")
	}
	for _, eco := range []string{"github-actions", "gomod"} {
		found := false
		for _, u := range cfg.Updates {
			if u.Ecosystem == eco && u.Directory == "/" && u.Schedule.Interval != "" {
				found = true
			}
		}
		if !found {
			out = append(out, "dependabot.yml: no update of the "+eco+" ecosystem for the directory / with a schedule")
		}
	}
	return out
}

func TestDependabot(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), ".github", "dependabot.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range dependabotProblems(raw) {
		t.Error(p)
	}
	// Each ecosystem dropped in turn is found.
	for _, eco := range []string{"github-actions", "gomod"} {
		var doc map[string]any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var kept []any
		for _, u := range doc["updates"].([]any) {
			if u.(map[string]any)["package-ecosystem"] != eco {
				kept = append(kept, u)
			}
		}
		doc["updates"] = kept
		broken, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(dependabotProblems(broken)) == 0 {
			t.Errorf("dependabot.yml without %s passes", eco)
		}
	}
}
