package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/testsupport/testenv"
)

// readmeProblems checks each ci command line of a Markdown document (docCommands) the way
// checkDocCommand does, with the document's scratch paths (/tmp/...) under scratch, and
// returns what it found and what failed.
func readmeProblems(doc, scratch string) (cmds []docCommand, problems []string) {
	cmds = docCommands(doc)
	for _, c := range cmds {
		c.args = append([]string(nil), c.args...)
		for i, a := range c.args {
			switch {
			case strings.HasPrefix(a, "/tmp/"):
				c.args[i] = filepath.Join(scratch, strings.TrimPrefix(a, "/tmp/"))
			case strings.HasPrefix(a, "oci:/tmp/"):
				// An image an earlier line made (ci base --output /tmp/base): a directory.
				dir := filepath.Join(scratch, strings.TrimPrefix(a, "oci:/tmp/"))
				if err := os.MkdirAll(dir, 0o755); err != nil {
					problems = append(problems, err.Error())
				}
				c.args[i] = "oci:" + dir
			case strings.HasPrefix(a, "pipeline/"):
				// A file of the checkout, named from its top as the README's reader runs it.
				c.args[i] = filepath.Join(testenv.RepoRoot(), a)
			}
		}
		if err := checkDocCommand(c); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c, err))
		}
	}
	return cmds, problems
}

// Every ci command line README.md and the pages under docs/ show still runs as shown: those of their shell code blocks
// through run itself up to the usage checks (build, pgo-profile) or through the command's
// flag parsing (the others), and those its prose names in code spans through the flag
// parsing. A lost or renamed flag or command, or a combination build now refuses, fails
// here naming the README line. Run in an empty directory, so that the README's outputs
// (nginx.tar, /tmp/tree) are new, as they are for someone following it.
func TestReadmeCommandLines(t *testing.T) {
	docs := docFiles(t)
	scratch := t.TempDir()
	t.Chdir(scratch)
	whole, spans, signKey := 0, 0, false
	for _, d := range docs {
		cmds, problems := readmeProblems(d.text, scratch)
		for _, p := range problems {
			t.Errorf("%s %s", d.name, p)
		}
		for _, c := range cmds {
			if !c.partial {
				whole++
			} else {
				spans++
			}
			signKey = signKey || strings.Contains(strings.Join(c.args, " "), "--sign-key key.pem")
		}
		if d.name == "README.md" && len(cmds) < 8 {
			t.Errorf("README.md: %d ci command lines; is the walk still reading it?", len(cmds))
		}
	}
	if whole < 12 || spans < 30 || !signKey {
		t.Errorf("README.md and docs/: %d command lines in code blocks and %d in code spans (want at least 12 and 30), --sign-key among them: %v; is the walk still reading them?", whole, spans, signKey)
	}
}

// A planted README whose every fault the walk names by line, while its good lines pass.
func TestReadmeWalkSeesItsFaults(t *testing.T) {
	planted := strings.Join([]string{
		"# Title", // 1
		"",
		"```sh",
		"# go run ./ci build --commented-out", // 4
		"sudo -E IMAGE=x go run ./ci build --engine host \\",
		"  --tree /tmp/t --no-such-flag     # (5)",
		"go run ./ci build --push --image \"$IMAGE:v1\" --revision \"$(git rev-parse HEAD)\" && echo ok",
		"go run ./ci build --push                 # (8)",
		"env A=1 go run ./ci buidl                # (9)",
		"echo \"$(go run ./ci tags --bogus)\"       # (10)",
		"go run ./ci build --engine host --output nginx.tar --cpu native",
		"go run ./ci pgo-profile --dir out/pgo --write # (12)",
		"```",
		"",
		"Prose: `ci build --engine host --no-smoke --output` and `ci smoke",
		"--image`, `go run ./ci help build`, `ci --version`; `ci bench --nope` (16).",
		"",
		"| `ci help nosuch` (18) | `go run ./ci lock trust COMPONENT FPR` |",
		"",
		"```yaml",
		"run: go run ./ci build --not-read",
		"```",
	}, "\n")
	scratch := t.TempDir()
	t.Chdir(scratch)
	cmds, problems := readmeProblems(planted, scratch)
	got := strings.Join(problems, "\n")
	for _, want := range []string{"line 5: `sudo -E IMAGE=x go run ./ci build --engine host --tree /tmp/t --no-such-flag", "-no-such-flag",
		"line 8: ", "--push needs --image", `line 9: `, `unknown command "buidl"`, "line 10: ", "-bogus",
		"line 12: ", "--write needs --in-repo or --url", "line 16: `ci bench --nope`", `line 18: `, `unknown command "nosuch"`} {
		if !strings.Contains(got, want) {
			t.Errorf("planted README: problems\n%s\nlack %q", got, want)
		}
	}
	if len(problems) != 7 {
		t.Errorf("planted README: %d problems, want the 7 planted:\n%s", len(problems), got)
	}
	if len(cmds) != 14 {
		t.Errorf("planted README: %d command lines, want 14 (7 in the sh block, 7 in code spans): %v", len(cmds), cmds)
	}
}
