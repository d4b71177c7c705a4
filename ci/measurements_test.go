package main

import (
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"
	"testing"
)

// measurementsDoc holds the published figures the README summarizes.
const measurementsDoc = "../pipeline/bench/MEASUREMENTS.md"

var mdLink = regexp.MustCompile(`\]\(([^)#]*MEASUREMENTS\.md)(#[^)]*)?\)`)

// measurementsProblems lists, for a Markdown document of figures, each table with no `ci`
// command between it and the table or heading before it (the command that gives the figures again),
// and each `ci` command in it that does not parse (checkDocCommand): an unknown subcommand,
// or a flag that subcommand does not have. Code spans are read across line breaks.
func measurementsProblems(doc string) []string {
	var problems []string
	var text []string
	start := 1
	flush := func(table string) {
		cmds := spanCommands(strings.Join(text, "\n"), start)
		for _, c := range cmds {
			if err := checkDocCommand(c); err != nil {
				problems = append(problems, fmt.Sprintf("%s: %v", c, err))
			}
		}
		if table != "" && len(cmds) == 0 {
			problems = append(problems, table+" names no `go run ./ci ...` command that reproduces it (since the table or heading before it)")
		}
		text = nil
	}
	inTable := false
	for i, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "#") { // a heading: a command above it is another section's
			flush("")
			continue
		}
		row := strings.HasPrefix(line, "|")
		if row && !inTable {
			flush(fmt.Sprintf("the table at line %d", i+1))
		}
		if !row {
			if len(text) == 0 {
				start = i + 1
			}
			text = append(text, line)
		}
		inTable = row
	}
	flush("")
	return problems
}

// headingAnchors are the GitHub anchors of a Markdown document's headings.
func headingAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(line, "#") {
			continue
		}
		h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(line, "#")))
		var b strings.Builder
		for _, r := range h {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		out["#"+b.String()] = true
	}
	return out
}

// Every table of published figures says, before it, which command gives it again, and every
// ci command there still parses: a renamed flag or subcommand fails here instead of leaving
// figures nobody can re-run. The links of README.md and docs/ into the document land on its headings. The
// planted document proves each check sees its fault.
func TestMeasurementsNameTheirCommands(t *testing.T) {
	b, err := os.ReadFile(measurementsDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range measurementsProblems(doc) {
		t.Errorf("%s: %s", measurementsDoc, p)
	}
	if n := strings.Count(doc, "\n|---"); n < 8 {
		t.Errorf("%s has %d tables; the figures moved out of the README are at least 8", measurementsDoc, n)
	}

	anchors := headingAnchors(doc)
	linked := 0
	for _, d := range docFiles(t) {
		for _, l := range mdLink.FindAllStringSubmatch(d.text, -1) {
			linked++
			if p := path.Clean(path.Join(path.Dir(d.name), l[1])); p != "pipeline/bench/MEASUREMENTS.md" {
				t.Errorf("%s links to %q (%s), want pipeline/bench/MEASUREMENTS.md", d.name, l[1], p)
			}
			if l[2] != "" && !anchors[l[2]] {
				t.Errorf("%s links to MEASUREMENTS.md%s, which is none of its headings %v", d.name, l[2], anchors)
			}
		}
	}
	if linked == 0 {
		t.Error("neither README.md nor docs/ links to pipeline/bench/MEASUREMENTS.md")
	}

	planted := "Figures: `go run ./ci bench`.\n\n# Section\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThen `go run ./ci bench --no-such-flag 1`\nand `ci benchmark --tree T`.\n\n| c |\n|---|\n"
	got := strings.Join(measurementsProblems(planted), "\n")
	for _, want := range []string{"the table at line 5 names no", "-no-such-flag", `unknown command "benchmark"`} {
		if !strings.Contains(got, want) {
			t.Errorf("planted document: problems\n%s\nlack %q", got, want)
		}
	}
	if strings.Contains(got, "line 12") {
		t.Errorf("planted document: the second table has commands before it, yet: %s", got)
	}
}
