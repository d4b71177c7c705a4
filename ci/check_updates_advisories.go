package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nginx-forge/nginx-forge/pipeline/actions"
	"github.com/nginx-forge/nginx-forge/pipeline/upstream"
)

// check-updates' rendering of the advisories: the security classification of the updates
// (pipeline/upstream's Security) and the refresh of the snapshot from the feeds
// (pipeline/upstream's AdvisoryRefresh).

// securityOutputs marks an update that fixes advisories: the title says so, the step outputs
// security (true/false, for update.yml's "security" label) and security_advisories (the
// IDs) tell it apart, and each unfixed advisory is a warning (annotation, summary).
func securityOutputs(rep *actions.Reporter, s *upstream.Security, outputs map[string]string) {
	outputs["security"] = "false"
	outputs["security_advisories"] = ""
	if s == nil {
		return
	}
	// The high and critical ones only: they set exitUnfixed, and their line goes in the
	// summary; the others are listed in the pull request's body.
	for _, f := range s.Serious() {
		// Short: the table's stream keeps to 100 columns; the full line, with the fixed
		// releases and link, is the exit status 4 error and the pull request body's.
		rep.Warningf("unfixed advisory: %s %s %s (%s), no fixed release on track %q", f.Component, f.Version, f.ID, f.Level(), f.Track)
	}
	if len(s.Fixes) == 0 {
		return
	}
	// The most severe first: the title names three, and a reviewer reads the worst there.
	fixes := slices.Clone(s.Fixes)
	slices.SortStableFunc(fixes, func(a, b upstream.SecurityFix) int { return int(b.Level()) - int(a.Level()) })
	var ids []string
	for _, f := range fixes {
		if !slices.Contains(ids, f.ID) {
			ids = append(ids, f.ID)
		}
	}
	outputs["security"] = "true"
	outputs["security_advisories"] = strings.Join(ids, " ")
	shown := ids
	if len(shown) > 3 {
		shown = append(slices.Clone(ids[:3]), fmt.Sprintf("and %d more", len(ids)-3))
	}
	if outputs["title"] != "" {
		outputs["title"] += " (security: " + strings.Join(shown, ", ") + ")"
	}
}

// unfixedError is exitUnfixed's error when s has a high or critical unfixed advisory.
func unfixedError(s *upstream.Security) error {
	var lines []string
	for _, f := range s.Serious() {
		lines = append(lines, upstream.UnfixedLine(f))
	}
	if len(lines) == 0 {
		return nil
	}
	return &exitError{code: exitUnfixed, err: fmt.Errorf("%d high or critical advisories have no fixed release on the component's track:\n%s", len(lines), strings.Join(lines, "\n"))}
}

// feedLines are the refresh's failures, one line each with its fix.
func feedLines(a *upstream.AdvisoryRefresh) []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, f := range a.Failed {
		out = append(out, fmt.Sprintf("%s; to resolve: %s", strings.ReplaceAll(f.Error(), "\n", "; "), f.Fix))
	}
	if a.WriteErr != nil {
		out = append(out, a.WriteErr.Error())
	}
	return out
}

// advisoryOutputs adds the refresh to the table and the step outputs: advisories_written
// (the snapshot file was rewritten: update.yml hands it to the pull request),
// advisories_changes (the IDs added, changed or removed) and, when written, "advisories
// snapshot" in the title.
func advisoryOutputs(a *upstream.AdvisoryRefresh, rows []actions.Row, outputs map[string]string) []actions.Row {
	outputs["advisories_written"] = "false"
	outputs["advisories_changes"] = ""
	if a == nil {
		return rows
	}
	if len(a.Failed) > 0 {
		var names []string
		for _, f := range a.Failed {
			names = append(names, f.Component)
		}
		return append(rows, actions.Row{Component: "advisories", Old: "failed", New: strings.Join(names, ", ") + " feed", SummaryOnly: true})
	}
	if !a.Changed() {
		return rows
	}
	var ids []string
	for _, c := range a.Changes {
		ids = append(ids, c.Kind+":"+c.Advisory.ID)
	}
	outputs["advisories_changes"] = strings.Join(ids, " ")
	if a.Written {
		outputs["advisories_written"] = "true"
		if outputs["title"] == "" {
			outputs["title"] = "Update advisories snapshot"
		} else {
			outputs["title"] += ", advisories snapshot"
		}
	}
	rows = append(rows, actions.Row{Component: "advisories", Old: fmt.Sprint(len(a.Before.Advisories)), New: fmt.Sprintf("%d (%s)", len(a.After.Advisories), a.Counts())})
	outputs["summary"] = actions.UpdateTableMarkdown("Upstream updates", rows)
	return rows
}
