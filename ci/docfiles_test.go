package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The documents a person reads: README.md (the quick start) and the pages under docs/ it
// links to. The walk tests read every one of them, so a command moved from the README to a
// page is checked where it now is.

// docFile is one document: its path from the repository's top ("README.md",
// "docs/offline.md") and its text.
type docFile struct{ name, text string }

// readmeMaxLines is how long README.md may be: a quick start that fits a first look; the
// rest belongs in docs/.
const readmeMaxLines = 250

// docFiles are README.md, then docs/*.md in name order, read from the checkout (tests run
// in ci/).
func docFiles(t testing.TB) []docFile {
	t.Helper()
	names := []string{"README.md"}
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pages)
	for _, p := range pages {
		names = append(names, strings.TrimPrefix(p, "../"))
	}
	if len(names) < 3 {
		t.Fatalf("found %v: README.md and the pages under docs/ it links to are the documents the walk reads", names)
	}
	var out []docFile
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("..", n))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, docFile{name: n, text: string(b)})
	}
	return out
}

// allDocs is every document's text, one after another (for what must be shown somewhere).
func allDocs(t testing.TB) string {
	var b strings.Builder
	for _, d := range docFiles(t) {
		b.WriteString(d.text)
		b.WriteString("\n")
	}
	return b.String()
}

var (
	// docLink is an inline Markdown link or image: its target up to the first space or ")".
	docLink  = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan = regexp.MustCompile("`[^`]*`")
	// slugDrop is what GitHub leaves out of a heading's anchor.
	slugDrop = regexp.MustCompile(`[^\p{L}\p{N}\- _]`)
	// inlineLink is a link inside a heading, whose text alone counts for the anchor.
	inlineLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
	// urlScheme starts a link to another site (https:, mailto:), which is not checked here.
	urlScheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
)

// proseLine is a line of a Markdown document outside its fenced code blocks, n from 1.
type proseLine struct {
	n    int
	text string
}

// proseLines are doc's lines outside fenced code blocks (a fence closes on the same marker).
func proseLines(doc string) []proseLine {
	var out []proseLine
	inFence := ""
	for i, line := range strings.Split(doc, "\n") {
		if m := fence.FindStringSubmatch(line); m != nil {
			switch {
			case inFence == "":
				inFence = m[1]
			case strings.HasPrefix(strings.TrimSpace(line), inFence):
				inFence = ""
			}
			continue
		}
		if inFence == "" {
			out = append(out, proseLine{n: i + 1, text: line})
		}
	}
	return out
}

// docAnchors are the anchors GitHub gives a Markdown document's headings: lower case, the
// punctuation dropped, spaces as hyphens, a repeated one suffixed -1, -2, ...
func docAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, pl := range proseLines(doc) {
		line := pl.text
		h := strings.TrimLeft(line, "#")
		if len(h) == len(line) || len(line)-len(h) > 6 || !strings.HasPrefix(h, " ") {
			continue
		}
		h = inlineLink.ReplaceAllString(strings.TrimSpace(h), "$1")
		s := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")
		a := s
		if n := seen[s]; n > 0 {
			a = fmt.Sprintf("%s-%d", s, n)
		}
		seen[s]++
		out[a] = true
	}
	return out
}

// brokenLinks are the relative links of a document (name: its path from the repository's
// top) whose file, or whose heading in a Markdown file, does not exist under root: each as
// "line N: target: why". Links inside code (blocks and spans) are not links, and links
// to other sites are not checked here.
func brokenLinks(root, name, doc string) []string {
	var out []string
	for _, pl := range proseLines(doc) {
		i, line := pl.n-1, pl.text
		for _, m := range docLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, ""), -1) {
			target := m[1]
			if urlScheme.MatchString(target) {
				continue // https:, mailto:
			}
			file, anchor, _ := strings.Cut(target, "#")
			rel := name
			if file != "" {
				rel = path.Clean(path.Join(path.Dir(name), file))
			}
			why := ""
			if strings.HasPrefix(rel, "../") || rel == ".." {
				why = "it leaves the repository"
			}
			var text []byte
			if why == "" && file == "" {
				if !docAnchors(doc)[anchor] {
					why = "no heading of " + name + " has the anchor #" + anchor
				}
			} else if why == "" {
				fi, err := os.Stat(filepath.Join(root, rel))
				switch {
				case err != nil:
					why = "no such file: " + rel
				case anchor != "" && !fi.IsDir() && strings.HasSuffix(rel, ".md"):
					text, err = os.ReadFile(filepath.Join(root, rel))
					if err != nil {
						why = err.Error()
					} else if !docAnchors(string(text))[anchor] {
						why = "no heading of " + rel + " has the anchor #" + anchor
					}
				}
			}
			if why != "" {
				out = append(out, fmt.Sprintf("line %d: %s: %s", i+1, target, why))
			}
		}
	}
	return out
}

// Every relative link of README.md and docs/*.md lands on a file of the checkout, and on a
// heading of it when it names one; a pending page's entry goes once the page exists.
func TestDocLinksResolve(t *testing.T) {
	links := 0
	for _, d := range docFiles(t) {
		for _, p := range brokenLinks("..", d.name, d.text) {
			t.Errorf("%s %s", d.name, p)
		}
		links += len(docLink.FindAllString(d.text, -1))
	}
	if links < 40 {
		t.Errorf("README.md and docs/ have %d links; is the check still reading them?", links)
	}
}

// A planted document's broken links are each named by line, its good ones pass: a missing
// file, a missing heading (of itself and of another page), a path out of the repository;
// links in code and to other sites are left alone.
func TestDocLinksSeeTheirFaults(t *testing.T) {
	root := t.TempDir()
	for name, text := range map[string]string{
		"README.md":      "# Top\n",
		"docs/other.md":  "# Other page\n\n## The `--mirror` flag (offline)\n\n## Again\n\n## Again\n",
		"docs/x/data.go": "package x\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	planted := strings.Join([]string{
		"# Planted page", // 1
		"",
		"[ok](other.md) [ok](other.md#the---mirror-flag-offline) [ok](#planted-page) [ok](../README.md) [ok](x/data.go#L1) [ok](other.md#again-1)",
		"[gone](nosuch.md)",                // 4
		"[gone](other.md#no-such-heading)", // 5
		"[gone](#nowhere)",                 // 6
		"[out](../../etc/passwd)",          // 7
		"[web](https://example.org/x) `[code](nosuch.md)`",
		"```sh",
		"echo [code](nosuch.md)",
		"```",
	}, "\n")
	got := brokenLinks(root, "docs/planted.md", planted)
	want := []string{
		"line 4: nosuch.md: no such file: docs/nosuch.md",
		"line 5: other.md#no-such-heading: no heading of docs/other.md has the anchor #no-such-heading",
		"line 6: #nowhere: no heading of docs/planted.md",
		"line 7: ../../etc/passwd: it leaves the repository",
	}
	if len(got) != len(want) {
		t.Fatalf("planted page: broken links\n%s\nwant the %d planted", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("planted page: broken link %d is %q, want %q", i+1, got[i], want[i])
		}
	}
}

// README.md is a quick start that fits a first look: at most readmeMaxLines lines, and it
// links each page under docs/, where the rest is.
func TestReadmeIsAQuickStart(t *testing.T) {
	docs := docFiles(t)
	readme := docs[0].text
	if n := strings.Count(strings.TrimRight(readme, "\n"), "\n") + 1; n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move what is not the quick start to a page under docs/", n, readmeMaxLines)
	}
	for _, d := range docs[1:] {
		if d.name != "docs/README.md" && !strings.Contains(readme, "]("+d.name) {
			t.Errorf("README.md does not link to %s", d.name)
		}
	}
}

// The examples of every command's help (`ci help CMD`) run as typed, by the rule the
// README's commands follow (checkDocCommand, through the command's real flag parsing).
func TestHelpExamplesRunAsTyped(t *testing.T) {
	scratch := t.TempDir()
	t.Chdir(scratch)
	seen := 0
	for name, cmd := range commands {
		_, examples, ok := strings.Cut(cmd.long, "\nExamples:\n")
		if !ok {
			continue
		}
		cmds, problems := readmeProblems("```sh\n"+examples+"\n```\n", scratch)
		for _, p := range problems {
			t.Errorf("ci help %s: example %s", name, p)
		}
		seen += len(cmds)
	}
	if seen < 8 {
		t.Errorf("the help texts' examples hold %d ci command lines; is the check still reading them?", seen)
	}
}
