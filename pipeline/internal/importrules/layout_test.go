package importrules

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// layoutPaths are the paths the Layout table of docs/architecture.md names (each `path` in its first column).
func layoutPaths(readme string) []string {
	_, rest, ok := strings.Cut(readme, "\n## Layout\n")
	if !ok {
		return nil
	}
	section, _, _ := strings.Cut(rest, "\n## ")
	var out []string
	cell := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		first := strings.SplitN(line, "|", 3)[1]
		for _, m := range cell.FindAllStringSubmatch(first, -1) {
			out = append(out, strings.TrimSuffix(m[1], "/"))
		}
	}
	return out
}

// goPackageDirs are the directories under pipeline/ that hold non-test Go files, other than
// ones inside a package the table names (engine/host is named by its own row or its parent's).
func goPackageDirs(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(root, "pipeline"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for d := range seen {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// missingFromLayout are the package directories no Layout path covers (a path covers itself
// and the directories below it), and the Layout paths that do not exist.
func missingFromLayout(root string, paths, pkgs []string) (uncovered, absent []string) {
	for _, p := range paths {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			absent = append(absent, p)
		}
	}
	for _, pkg := range pkgs {
		covered := false
		for _, p := range paths {
			if pkg == p || strings.HasPrefix(pkg, p+"/") {
				covered = true
			}
		}
		if !covered {
			uncovered = append(uncovered, pkg)
		}
	}
	return uncovered, absent
}

// TestReadmeLayoutMatchesTheTree: every path the Layout table of docs/architecture.md names exists, and
// every package under pipeline/ is named there (itself or a parent).
func TestReadmeLayoutMatchesTheTree(t *testing.T) {
	root := testenv.RepoRoot()
	b, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	paths := layoutPaths(string(b))
	if len(paths) < 5 {
		t.Fatalf("docs/architecture.md's Layout table names %d paths: is the section there?", len(paths))
	}
	uncovered, absent := missingFromLayout(root, paths, goPackageDirs(t, root))
	for _, p := range absent {
		t.Errorf("docs/architecture.md's Layout names %s, which does not exist", p)
	}
	for _, p := range uncovered {
		t.Errorf("package %s is not in the Layout table of docs/architecture.md", p)
	}

	// The check can fail: a package the table does not name, and a row for a removed one.
	planted, gone := missingFromLayout(root, append(paths, "pipeline/removed"), append(goPackageDirs(t, root), "pipeline/unlisted"))
	if len(gone) != len(absent)+1 || gone[len(gone)-1] != "pipeline/removed" || len(planted) != len(uncovered)+1 || planted[len(planted)-1] != "pipeline/unlisted" {
		t.Errorf("planted layout faults not caught: absent %q, uncovered %q", gone, planted)
	}
}
