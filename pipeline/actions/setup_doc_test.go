package actions

// docs/github-setup.md is what a repository that runs these workflows sets: every variable
// and secret they read, the test hooks that must stay empty, and the checks branch
// protection should require. These tests keep it true to the workflows.

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// setupPage is the page, relative to the repository root.
const setupPage = "docs/github-setup.md"

// inputRE finds a variable or a secret a workflow reads.
var inputRE = regexp.MustCompile(`\b(vars|secrets)\.([A-Za-z_][A-Za-z0-9_]*)`)

// testHooks are the variables only the workflow tier sets; the page must list them where it
// says to leave them empty.
var testHooks = []string{"BUILD_INPUT_FLAGS", "CHECK_UPDATES_UPSTREAM_FLAGS", "UPDATE_PGO_FLAGS", "KEYLESS_SKIP_REASON"}

func readSetupPage(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), setupPage))
	if err != nil {
		t.Fatalf("%s: %v", setupPage, err)
	}
	return string(b)
}

// undocumentedInputs lists each variable and secret a workflow reads that the page does not
// name in backquotes, as "file: vars.NAME".
func undocumentedInputs(workflows map[string]string, page string) []string {
	var out []string
	seen := map[string]bool{}
	for file, text := range workflows {
		for _, m := range inputRE.FindAllStringSubmatch(text, -1) {
			key := file + ": " + m[1] + "." + m[2]
			if seen[key] {
				continue
			}
			seen[key] = true
			if !strings.Contains(page, "`"+m[2]+"`") {
				out = append(out, key)
			}
		}
	}
	sort.Strings(out)
	return out
}

// section is the page's text under the heading that starts with title, up to the next
// heading of the same or a higher level.
func section(page, title string) string {
	i := strings.Index(page, "\n"+title)
	if i < 0 {
		return ""
	}
	rest := page[i+1:]
	level := len(title) - len(strings.TrimLeft(title, "#"))
	lines := strings.Split(rest, "\n")
	for n, l := range lines[1:] {
		if h := len(l) - len(strings.TrimLeft(l, "#")); h > 0 && h <= level && strings.HasPrefix(l[h:], " ") {
			return strings.Join(lines[:n+1], "\n")
		}
	}
	return rest
}

// prCheckNames are the names GitHub gives the checks a pull request runs in build.yml: each
// job that runs on pull requests, its name with each matrix row filled in.
func prCheckNames(t *testing.T, text string) []string {
	t.Helper()
	w, errs := actionlint.Parse([]byte(text))
	if len(errs) > 0 {
		t.Fatalf("build.yml: %v", errs[0])
	}
	var names []string
	for id, j := range w.Jobs {
		if offPR(w, j) {
			continue
		}
		name := id
		if j.Name != nil {
			name = j.Name.Value
		}
		rows := matrixRows(j)
		if len(rows) == 0 {
			names = append(names, name)
			continue
		}
		for _, r := range rows {
			n := regexp.MustCompile(`\$\{\{\s*matrix\.([a-z]+)\s*\}\}`).ReplaceAllStringFunc(name, func(e string) string {
				return r[regexp.MustCompile(`matrix\.([a-z]+)`).FindStringSubmatch(e)[1]]
			})
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// TestSetupPageDocumentsEveryInput: every variable and secret build.yml and update.yml read
// is named on the page; the test hooks are listed where it says to leave them empty; and
// the checks it says to require are exactly those a pull request runs, by their names.
func TestSetupPageDocumentsEveryInput(t *testing.T) {
	page := readSetupPage(t)
	workflows := map[string]string{"build.yml": readWorkflow(t, "build.yml"), "update.yml": readWorkflow(t, "update.yml")}
	for _, p := range undocumentedInputs(workflows, page) {
		t.Errorf("%s reads %s, which %s does not document (name it in backquotes with what it is for)", strings.SplitN(p, ": ", 2)[0], strings.SplitN(p, ": ", 2)[1], setupPage)
	}
	hooks := section(page, "### Test hooks")
	if hooks == "" {
		t.Errorf("%s has no section \"### Test hooks\"", setupPage)
	}
	for _, h := range testHooks {
		if !strings.Contains(hooks, "`"+h+"`") {
			t.Errorf("%s: the test hook %s is not listed under \"### Test hooks\" (leave these empty)", setupPage, h)
		}
		if !strings.Contains(workflows["build.yml"]+workflows["update.yml"], "vars."+h) {
			t.Errorf("the test hook %s is read by no workflow: remove it from testHooks and the page", h)
		}
	}
	protect := section(page, "## What runs, and the checks to require")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^- `([^`]+)`$").FindAllStringSubmatch(protect, -1) {
		listed = append(listed, m[1])
	}
	sort.Strings(listed)
	want := prCheckNames(t, workflows["build.yml"])
	if strings.Join(listed, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s says to require the checks\n  %s\nbut a pull request runs\n  %s", setupPage, strings.Join(listed, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestSetupPageRuleFindsPlanted: a variable and a secret planted in a copy of build.yml, and
// a pull-request check renamed, are each found.
func TestSetupPageRuleFindsPlanted(t *testing.T) {
	page := readSetupPage(t)
	text := readWorkflow(t, "build.yml")
	old := "          VARIANT_FLAGS: ${{ matrix.flags }}\n        # --output writes the image as an OCI layout"
	if strings.Count(text, old) != 1 {
		t.Fatalf("build.yml has not %q once", old)
	}
	planted := strings.Replace(text, old, "          PLANTED: ${{ vars.PLANTED_UNDOCUMENTED }} ${{ secrets.PLANTED_SECRET }}\n"+old, 1)
	got := undocumentedInputs(map[string]string{"build.yml": planted}, page)
	if strings.Join(got, ",") != "build.yml: secrets.PLANTED_SECRET,build.yml: vars.PLANTED_UNDOCUMENTED" {
		t.Errorf("with an undocumented variable and secret planted, the rule finds %q", got)
	}
	if got := undocumentedInputs(map[string]string{"build.yml": text}, page); len(got) != 0 {
		t.Errorf("the real build.yml: %q", got)
	}
	renamed := strings.Replace(text, "    name: build, smoke-test and scan (", "    name: build and smoke-test (", 1)
	names := prCheckNames(t, renamed)
	if !strings.Contains(strings.Join(names, "\n"), "build and smoke-test (aws-lc, arm64)") {
		t.Errorf("with the check job renamed, the pull request's checks are %q", names)
	}
	for _, n := range names {
		if n != "test" && !strings.Contains(page, "- `"+n+"`") {
			return // the renamed check is not on the page: the comparison above would fail
		}
	}
	t.Errorf("with the check job renamed, every check name %q is still listed on the page", names)
}
