package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nginx-forge/nginx-forge/pipeline/forge"
	"github.com/nginx-forge/nginx-forge/pipeline/lock"
	"github.com/nginx-forge/nginx-forge/pipeline/plan"
)

const modulesHelp = `List the nginx modules a build can compile in: whether the default set has each one (for
the lock given), what it adds, and what it needs; for a third-party module, each of its
components with the version the lock pins and its licence.

--modules on build, pgo-profile, dockerfile and smoke takes either a plain list, which
replaces the default set, or +name and -name entries, which change it:

  go run ./ci build --modules +mail,+mail_ssl,-http_v3       # the default set, changed
  go run ./ci build --modules http_ssl,http_v2,pcre-jit      # exactly these

The third-party modules (brotli, zstd, geoip2, echo, fancyindex) are built from lock
components; they are in the default set when the lock has those components
(pipeline/lock/testdata/modules.lock.json pins the catalogue's).`

func init() {
	register(&command{
		name:    "modules",
		summary: "list the nginx modules (default set, what each adds) that --modules takes",
		usage:   "[--lock FILE]",
		long:    modulesHelp,
		flags: func(fs *flag.FlagSet) runFunc {
			lockFile := fs.String("lock", lock.DefaultPath, "lock `file` whose default module set is shown (when the default is absent, the lock built into this program)")
			return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				if err := noArgs("modules", args); err != nil {
					return err
				}
				l, _, err := forge.LoadLock(*lockFile)
				if err != nil {
					return err
				}
				return printModules(stdout, l)
			}
		},
	})
}

func printModules(w io.Writer, l *lock.Lock) error {
	def := map[string]bool{}
	for _, m := range plan.DefaultModulesOf(l) {
		def[m] = true
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MODULE\tDEFAULT\tADDS")
	for _, m := range plan.Modules {
		d := "-"
		if def[m.Name] {
			d = "yes"
		}
		adds := m.Summary
		var needs []string
		if len(m.Requires) > 0 {
			needs = append(needs, "module "+strings.Join(m.Requires, ", "))
		}
		if len(m.Components) > 0 {
			adds += " [" + componentFacts(l, m.Components) + "]"
			c := "lock components " + strings.Join(m.Components, ", ")
			if !l.HasComponents(m.Components...) {
				c += " (not in this lock)"
			}
			needs = append(needs, c)
		}
		if len(needs) > 0 {
			adds += "; needs " + strings.Join(needs, " and ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", m.Name, d, adds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\n--modules +a,-b changes the default set; --modules a,b replaces it.")
	return nil
}

// componentFacts is a third-party module's components as `ci modules` shows them: each
// one's version in l (when l has it) and its licence (the component table's), "name
// version licence", comma-separated.
func componentFacts(l *lock.Lock, names []string) string {
	var out []string
	for _, n := range names {
		f := n
		if c, ok := l.Component(n); ok {
			f += " " + c.Version
		}
		if spec, ok := lock.SpecOf(n); ok {
			f += " " + spec.License
		}
		out = append(out, f)
	}
	return strings.Join(out, ", ")
}
