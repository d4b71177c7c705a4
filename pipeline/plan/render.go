package plan

import (
	"fmt"
	"strings"
)

// Render is a stable, human-readable text of the whole plan: what a reviewer diffs to see
// which flags, environment or script lines changed (the golden test keeps it under
// testdata/). Shipped files appear by path and mode only: their content belongs to others
// and is covered by their own tests.
func (p *Plan) Render() string {
	var b strings.Builder
	fmt.Fprintf(&b, "platform: %s\n", p.Platform)
	if p.Cross != nil {
		fmt.Fprintf(&b, "cross: from %s with %s (qemu prefix %s)\n", p.Cross.Build, p.Cross.Triple, p.Cross.Sysroot)
	}
	fmt.Fprintf(&b, "cpu: %s\n", p.CPU)
	fmt.Fprintf(&b, "modules: %s\n", strings.Join(p.Modules, " "))
	fmt.Fprintf(&b, "jobs: %d\n", p.Jobs)
	fmt.Fprintf(&b, "optimize: %s\n", p.Optimize)
	fmt.Fprintf(&b, "source_date_epoch: %d\n", p.SourceDateEpoch)
	fmt.Fprintf(&b, "builder: %s\n", p.BuilderImage)
	if p.BuilderSnapshot != "" {
		// Only when set, so that the renderings of a lock without it do not move.
		fmt.Fprintf(&b, "builder snapshot: %s\n", p.BuilderSnapshot)
	}
	fmt.Fprintf(&b, "build packages: %s\n", strings.Join(p.BuildPackages, " "))
	for _, t := range p.HostTools {
		fmt.Fprintf(&b, "host tool: %s (%s)\n", t.Command, t.Package)
	}
	for _, t := range p.HostLibraries {
		fmt.Fprintf(&b, "host library: %s (%s)\n", t.Command, t.Package)
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	fmt.Fprintf(&b, "final: %s\n", p.Final)
	for _, s := range p.Stages {
		fmt.Fprintf(&b, "\n=== stage %s\n", s.Name)
		pin := "sha256:" + s.Source.SHA256
		if s.Source.Tree != "" {
			pin = s.Source.Pin()
		}
		fmt.Fprintf(&b, "source: %s %s %s %s\n", s.Source.Component, s.Source.Version, s.Source.FileName, pin)
		if len(s.Deps) > 0 {
			fmt.Fprintf(&b, "deps: %s\n", strings.Join(s.Deps, " "))
		}
		for _, e := range s.Env {
			fmt.Fprintf(&b, "env %s=%s\n", e.Name, e.Value)
		}
		for _, f := range s.Files {
			fmt.Fprintf(&b, "file %s mode %04o\n", f.Path, f.Mode)
		}
		b.WriteString("script:\n")
		for _, line := range strings.Split(strings.TrimRight(s.Script, "\n"), "\n") {
			b.WriteString("  | " + line + "\n")
		}
	}
	return b.String()
}
