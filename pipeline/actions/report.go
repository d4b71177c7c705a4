package actions

import (
	"context"
	"fmt"
	"strings"
)

// Row is one line of an update summary: a component (or base image), its locked and newest
// versions (or digests), and the support status of the newest one's branch.
type Row struct {
	Component string
	Old, New  string
	EOL       string
	// SummaryOnly rows are left out of the terminal's table (a failed lookup: the terminal
	// says it on an error line of its own).
	SummaryOnly bool
}

// Changed reports whether the row's newest version differs from the locked one.
func (r Row) Changed() bool { return r.New != "" && r.New != r.Old }

// newText is what the tables say in the new column: the newest version, or why there is
// none to show.
func (r Row) newText() string {
	switch {
	case r.New == "":
		return "(lookup failed)"
	case !r.Changed():
		return "(unchanged)"
	}
	return r.New
}

// UpdateTableMarkdown renders rows as a GitHub-flavoured markdown table under a heading.
func UpdateTableMarkdown(title string, rows []Row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### %s\n\n", mdEscape(title))
	b.WriteString("| component | old | new | EOL |\n|---|---|---|---|\n")
	for _, r := range rows {
		nw := r.newText()
		if r.Changed() {
			nw = "**" + nw + "**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", mdEscape(r.Component), mdCode(r.Old), mdCell(nw), mdCell(orDash(r.EOL)))
	}
	b.WriteString("\n")
	return b.String()
}

// updateTableText renders rows (but those only for the summary) as an aligned plain-text
// table that fits a terminal of textWidth columns, long cells wrapped.
func updateTableText(title string, rows []Row) string {
	cells := [][]string{{"COMPONENT", "OLD", "NEW", "EOL"}}
	for _, r := range rows {
		if !r.SummaryOnly {
			cells = append(cells, []string{r.Component, short(orDash(r.Old)), short(r.newText()), orDash(r.EOL)})
		}
	}
	return title + "\n" + renderTable(cells, textWidth)
}

// UpdateSummary writes the table to the step summary in Actions, as text elsewhere.
func (r *Reporter) UpdateSummary(ctx context.Context, title string, rows []Row) error {
	return r.AddSummary(ctx, UpdateTableMarkdown(title, rows), updateTableText(title, rows))
}

// ImageResult is what a build publishes: the image's digest and the tags moved to it.
type ImageResult struct {
	Image  string   // repository, e.g. ghcr.io/owner/repo/nginx
	Digest string   // sha256:...
	Tags   []string // full references that now point at Digest
}

// ImageOutputs sets the outputs `image`, `digest`, `ref` (image@digest) and `tags` (one per
// line) and adds a short summary. Outside Actions it prints the pinned reference and tags.
func (r *Reporter) ImageOutputs(ctx context.Context, res ImageResult) error {
	ref := res.Image + "@" + res.Digest
	if err := r.SetOutputs(ctx, map[string]string{
		"image":  res.Image,
		"digest": res.Digest,
		"ref":    ref,
		"tags":   strings.Join(res.Tags, "\n"),
	}); err != nil {
		return err
	}
	var md, txt strings.Builder
	fmt.Fprintf(&md, "### Image\n\n`%s`\n\n", ref)
	fmt.Fprintf(&txt, "image %s\n", ref)
	for _, t := range res.Tags {
		fmt.Fprintf(&md, "- `%s`\n", t)
		fmt.Fprintf(&txt, "tag   %s\n", t)
	}
	md.WriteString("\n")
	return r.AddSummary(ctx, md.String(), txt.String())
}

// short abbreviates a digest for the terminal table (the markdown keeps it whole): the first
// 12 hex digits identify an image for a reader, as in docker's output.
func short(s string) string {
	if strings.HasPrefix(s, "sha256:") && len(s) == len("sha256:")+64 {
		return s[:len("sha256:")+12] + "..."
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// mdEscape keeps upstream-provided text from breaking the table or injecting markup.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;")
	return r.Replace(s)
}

func mdCell(s string) string { return mdEscape(s) }

func mdCode(s string) string {
	if s == "" {
		return "-"
	}
	return "`" + strings.ReplaceAll(mdEscape(s), "`", "") + "`"
}
