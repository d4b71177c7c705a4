package actions

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// The update pull request's paths, run for real: the pull-request job's listing step (its
// run: script, with bash) in a scratch git repository shaped like this one, then what
// peter-evans/create-pull-request v7 does with add-paths (split on newlines and commas,
// git add -- <paths>), then the staged files compared with what the run changed. Issue 36:
// a fixed add-paths naming pipeline/lock/profiles/*.tar.gz made git add refuse the whole list
// in every run that recorded no profile, so the scheduled update never opened its pull request.

// addPathsOf returns the add-paths create-pull-request would get in job prID of the workflow
// text, running the step it names in dir (a git work tree) when it is a step output.
func addPathsOf(t *testing.T, text, dir string) ([]string, error) {
	t.Helper()
	w, errs := actionlint.Parse([]byte(text))
	if len(errs) > 0 {
		t.Fatalf("update.yml: %v", errs[0])
	}
	prIDs := jobsWhere(w, usesAction("peter-evans/create-pull-request"))
	if len(prIDs) != 1 {
		t.Fatalf("want one job with peter-evans/create-pull-request, found %v", prIDs)
	}
	pr := w.Jobs[prIDs[0]]
	var ap string
	for _, s := range pr.Steps {
		if actionOf(s) == "peter-evans/create-pull-request" {
			ap = inputOf(s, "add-paths")
		}
	}
	if m := stepOutputRE.FindStringSubmatch(ap); m != nil {
		s := pathsStep(pr, m[1])
		if s == nil {
			return nil, fmt.Errorf("add-paths is %q, but job %s has no step %s", ap, prIDs[0], m[1])
		}
		outFile := filepath.Join(t.TempDir(), "output")
		cmd := exec.Command("bash", "-e", "-c", runOf(s))
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GITHUB_OUTPUT="+outFile, "RUNNER_TEMP="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("step %s: %v\n%s", m[1], err, out)
		}
		if _, err := os.Stat(outFile); err != nil {
			return nil, fmt.Errorf("step %s wrote no outputs", m[1])
		}
		ap = parseOutputs(t, outFile)[m[2]]
	}
	var paths []string
	for _, p := range regexp.MustCompile(`[\n,]+`).Split(ap, -1) {
		if p = strings.TrimSpace(p); p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func git(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+filepath.Join(dir, ".git-global-config"), "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(t, dir, args...)
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return out
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// pathsScenario is one run's changes to a checkout of the repository's lock directory.
type pathsScenario struct {
	name   string
	change map[string]string // path -> new content
	want   []string          // staged, sorted
}

var pathsScenarios = []pathsScenario{
	{"one lock, no profile recorded", map[string]string{"pipeline/lock/stack.lock.json": `{"v":2}`},
		[]string{"pipeline/lock/stack.lock.json"}},
	{"both locks and a newly vendored key", map[string]string{
		"pipeline/lock/stack.lock.json": `{"v":2}`, "pipeline/lock/aws-lc.lock.json": `{"w":2}`,
		"pipeline/lock/keys/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB.asc": "-----BEGIN PGP PUBLIC KEY BLOCK-----\nnew\n"},
		[]string{"pipeline/lock/aws-lc.lock.json", "pipeline/lock/keys/BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB.asc", "pipeline/lock/stack.lock.json"}},
	{"a PGO profile recorded", map[string]string{
		"pipeline/lock/stack.lock.json":                                    `{"v":2,"profiles":[]}`,
		"pipeline/lock/profiles/nginx-forge-pgo-amd64-0123456789ab.tar.gz": "profile"},
		[]string{"pipeline/lock/profiles/nginx-forge-pgo-amd64-0123456789ab.tar.gz", "pipeline/lock/stack.lock.json"}},
}

// stagedPaths sets up a scratch repository (the two locks and one vendored key committed, no
// profiles directory, as this repository is), applies the scenario, lists and adds the paths
// as the workflow would, and returns what is staged, or git add's refusal.
func stagedPaths(t *testing.T, text string, sc pathsScenario) ([]string, error) {
	t.Helper()
	dir := t.TempDir()
	mustGit(t, dir, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(dir, "pipeline/lock/stack.lock.json"), `{"v":1}`)
	writeFile(t, filepath.Join(dir, "pipeline/lock/aws-lc.lock.json"), `{"w":1}`)
	writeFile(t, filepath.Join(dir, "pipeline/lock/keys/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA.asc"), "-----BEGIN PGP PUBLIC KEY BLOCK-----\nold\n")
	writeFile(t, filepath.Join(dir, "README.md"), "x\n")
	mustGit(t, dir, "add", "-A")
	mustGit(t, dir, "commit", "-q", "-m", "base")
	for p, c := range sc.change {
		writeFile(t, filepath.Join(dir, p), c)
	}
	// Something the run leaves in the tree that the pull request must not carry.
	writeFile(t, filepath.Join(dir, "ci/stray.txt"), "not for the pull request\n")
	paths, err := addPathsOf(t, text, dir)
	if err != nil {
		return nil, err
	}
	if out, err := git(t, dir, append([]string{"add", "--"}, paths...)...); err != nil {
		return nil, fmt.Errorf("git add -- %s refused: %v\n%s", strings.Join(paths, " "), err, out)
	}
	staged := strings.Fields(mustGit(t, dir, "diff", "--cached", "--name-only"))
	slices.Sort(staged)
	return staged, nil
}

// needGitBash: git holds the checkout (a fast tool); bash is the runner's shell, which the
// step's script is written for: without it the test cannot say anything, so it fails.
func needGitBash(t *testing.T) {
	t.Helper()
	testenv.Tool(t, "git", "git")
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatalf("bash, the shell the workflow's run: scripts are written for, is not on PATH: %v", err)
	}
}

// TestUpdatePullRequestAddsPaths: in each scenario exactly what the run changed is staged,
// and git add accepts the list.
func TestUpdatePullRequestAddsPaths(t *testing.T) {
	needGitBash(t)
	text := readWorkflow(t, "update.yml")
	for _, sc := range pathsScenarios {
		t.Run(sc.name, func(t *testing.T) {
			got, err := stagedPaths(t, text, sc)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, sc.want) {
				t.Errorf("staged %q, want %q", got, sc.want)
			}
		})
	}
}

// TestUpdatePullRequestAddsPathsCatchesFixedList plants issue 36's defect back (the fixed
// add-paths with the profiles) and wants the run with no profile to be refused by git add.
func TestUpdatePullRequestAddsPathsCatchesFixedList(t *testing.T) {
	needGitBash(t)
	text := readWorkflow(t, "update.yml")
	old := "          add-paths: ${{ steps.paths.outputs.paths }}\n"
	planted := "          add-paths: |\n            pipeline/lock/stack.lock.json\n            pipeline/lock/aws-lc.lock.json\n            pipeline/lock/keys/*.asc\n            pipeline/lock/profiles/*.tar.gz\n"
	if strings.Count(text, old) != 1 {
		t.Fatalf("update.yml does not have %q once", old)
	}
	_, err := stagedPaths(t, strings.Replace(text, old, planted, 1), pathsScenarios[0])
	if err == nil || !strings.Contains(err.Error(), "pathspec 'pipeline/lock/profiles/*.tar.gz' did not match any files") {
		t.Fatalf("with the fixed list, git add was not refused for the missing profiles: %v", err)
	}
}
