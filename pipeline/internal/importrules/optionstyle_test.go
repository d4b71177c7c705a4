package importrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The option-style rule (issue 38: "one option style per package", as go-containerregistry's
// remote and ko's build do it):
//
//   - An option type is an exported type that is either functional (a func type whose one
//     parameter is a pointer: `type Option func(*options)`, with or without an error result)
//     or a struct whose name ends in "Options", or an exported struct that is the only
//     parameter of an exported constructor (func NewX(c XConfig)), whatever its name:
//     upstream.FetchConfig configured NewFetcher field by field, an option struct by
//     another name. A struct other functions take along with other values (the runtime
//     contract, plan.RuntimeConfig) describes a thing, and is not one.
//   - A library package under pipeline/ declares at most one option type, so a caller never
//     wonders which style a function takes: one Option, its defaults applied once in one
//     place (makeOptions), each function reading the settings it is about.
//   - A struct option type is allowed only where a command binds its flags to it (or fills it
//     from them): structOptions lists those packages, each with the command, and a listed
//     package that no longer has one must leave the list.
//
// Test support (pipeline/testsupport, pipeline/workflowtest) is not the program and is not
// held to it.

// structOptions are the packages whose option type is a struct, each with the command whose
// flags fill it.
var structOptions = map[string]string{
	"pipeline/bench":   "ci bench and ci tune fill bench.Options from their flags (benchOpts.options)",
	"pipeline/standin": "ci base binds --mirror, --suite and --arch to standin.Options' fields",
	"pipeline/smoke":   "the in-engine smoke client (smoke.ClientMain) fills Options from its flags, as ci smoke does through forge.SmokeRequest; engine.Engine.Smoke carries it as one value",
}

// optionTypes maps each product package directory under pipeline/ to its exported option
// types, "Name (functional)" or "Name (struct)", from the non-test Go files of the tree.
func optionTypes(files map[string]*ast.File) map[string][]string {
	out := map[string][]string{}
	structs := map[string]map[string]bool{}     // dir -> exported struct types not named *Options
	constructed := map[string]map[string]bool{} // dir -> type names that are a New*'s only parameter
	for rel, f := range files {
		dir := path.Dir(rel)
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !fd.Name.IsExported() || !strings.HasPrefix(fd.Name.Name, "New") {
				continue
			}
			if ps := fd.Type.Params.List; len(ps) == 1 && len(ps[0].Names) <= 1 {
				if id, ok := ps[0].Type.(*ast.Ident); ok {
					if constructed[dir] == nil {
						constructed[dir] = map[string]bool{}
					}
					constructed[dir][id.Name] = true
				}
			}
		}
	}
	for rel, f := range files {
		dir := path.Dir(rel)
		if !strings.HasPrefix(dir, "pipeline/") || strings.HasPrefix(dir, "pipeline/testsupport") || strings.HasPrefix(dir, "pipeline/workflowtest") {
			continue
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if !ts.Name.IsExported() {
					continue
				}
				switch t := ts.Type.(type) {
				case *ast.FuncType:
					if functionalOption(t) {
						out[dir] = append(out[dir], ts.Name.Name+" (functional)")
					}
				case *ast.StructType:
					if strings.HasSuffix(ts.Name.Name, "Options") {
						out[dir] = append(out[dir], ts.Name.Name+" (struct)")
					} else {
						if structs[dir] == nil {
							structs[dir] = map[string]bool{}
						}
						structs[dir][ts.Name.Name] = true
					}
				}
			}
		}
	}
	for dir, names := range structs {
		for name := range names {
			if constructed[dir][name] {
				out[dir] = append(out[dir], name+" (struct)")
			}
		}
	}
	for dir := range out {
		sort.Strings(out[dir])
	}
	return out
}

// functionalOption: one pointer parameter, and no result or an error.
func functionalOption(t *ast.FuncType) bool {
	if t.Params == nil || len(t.Params.List) != 1 || len(t.Params.List[0].Names) > 1 {
		return false
	}
	if _, ok := t.Params.List[0].Type.(*ast.StarExpr); !ok {
		return false
	}
	if t.Results == nil || len(t.Results.List) == 0 {
		return true
	}
	id, ok := t.Results.List[0].Type.(*ast.Ident)
	return len(t.Results.List) == 1 && ok && id.Name == "error"
}

// optionStyleViolations lists each package with more than one option type, each struct
// option type outside structOptions, and each listed package without one.
func optionStyleViolations(types map[string][]string, listed map[string]string) []string {
	var out []string
	for dir, ts := range types {
		if len(ts) > 1 {
			out = append(out, fmt.Sprintf("%s declares %d option types (%s): keep one, a functional Option with its defaults applied once (makeOptions)", dir, len(ts), strings.Join(ts, ", ")))
		}
		for _, t := range ts {
			if strings.HasSuffix(t, "(struct)") && listed[dir] == "" {
				out = append(out, fmt.Sprintf("%s: %s is an option struct, but no command binds flags to it: make it a functional Option (or add the package to structOptions with the command that binds it)", dir, strings.TrimSuffix(t, " (struct)")))
			}
		}
	}
	for dir := range listed {
		if !slices.ContainsFunc(types[dir], func(t string) bool { return strings.HasSuffix(t, "(struct)") }) {
			out = append(out, "structOptions lists "+dir+", which has no option struct: drop the line")
		}
	}
	sort.Strings(out)
	return out
}

// pipelineFiles parses the non-test Go files under pipeline/ (testdata and dot directories
// skipped), keyed by their path relative to the repository root.
func pipelineFiles(t *testing.T) map[string]*ast.File {
	t.Helper()
	out := map[string]*ast.File{}
	for _, s := range treeSources(t) {
		if !strings.HasPrefix(s.rel, "pipeline/") || strings.HasSuffix(s.rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), s.rel, s.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", s.rel, err)
		}
		out[s.rel] = f
	}
	return out
}

func TestOneOptionStylePerPackage(t *testing.T) {
	files := pipelineFiles(t)
	types := optionTypes(files)
	if got := types["pipeline/image"]; !slices.Equal(got, []string{"Option (functional)"}) {
		t.Fatalf("pipeline/image's option types read as %q: is the walker reading the tree?", got)
	}
	for _, v := range optionStyleViolations(types, structOptions) {
		t.Error(v)
	}
}

// TestOptionStyleCanFail plants, beside the real tree, a package with two functional option
// types (ocirun's Option and RunOption before issue 38), one mixing a functional option with
// an option struct (the host engine's Option and SmokeOptions), one with an option struct
// no command binds, and one with a constructor's config struct (upstream.FetchConfig) beside
// a struct that is not an option; and drops a listed package's struct. Each is reported, and nothing else.
func TestOptionStyleCanFail(t *testing.T) {
	files := pipelineFiles(t)
	plant := map[string]string{
		"pipeline/planted/two/two.go": `package two
type Option func(*options)
type RunOption func(*runOptions) error
type options struct{}
type runOptions struct{}
type Hook func(ctx *int, n int) // two parameters: not an option
`,
		"pipeline/planted/mixed/mixed.go": `package mixed
type Option func(*Executor)
type SmokeOptions struct{ ConfD string }
type Executor struct{}
`,
		"pipeline/planted/unbound/unbound.go": `package unbound
type ServeOptions struct{ TLSDir string }
`,
		// upstream.FetchConfig as it was, and a struct that is no constructor's only
		// parameter (plan.RuntimeConfig's shape).
		"pipeline/planted/config/config.go": `package config
type FetchConfig struct{ Mirror, CacheDir string }
type Fetcher struct{}
func NewFetcher(c FetchConfig) Fetcher { return Fetcher{} }
type RuntimeConfig struct{ User string }
func NewServer(name string, rc RuntimeConfig) {}
`,
		"pipeline/testsupport/planted/p.go": `package planted
type Options struct{}
type Option func(*Options)
`,
	}
	for rel, src := range plant {
		f, err := parser.ParseFile(token.NewFileSet(), rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files[rel] = f
	}
	listed := map[string]string{}
	for k, v := range structOptions {
		listed[k] = v
	}
	listed["pipeline/image"] = "planted: image has a functional Option, no struct"
	got := optionStyleViolations(optionTypes(files), listed)
	want := []string{
		"pipeline/planted/config: FetchConfig is an option struct, but no command binds flags to it: make it a functional Option (or add the package to structOptions with the command that binds it)",
		"pipeline/planted/mixed declares 2 option types (Option (functional), SmokeOptions (struct)): keep one, a functional Option with its defaults applied once (makeOptions)",
		"pipeline/planted/mixed: SmokeOptions is an option struct, but no command binds flags to it: make it a functional Option (or add the package to structOptions with the command that binds it)",
		"pipeline/planted/two declares 2 option types (Option (functional), RunOption (functional)): keep one, a functional Option with its defaults applied once (makeOptions)",
		"pipeline/planted/unbound: ServeOptions is an option struct, but no command binds flags to it: make it a functional Option (or add the package to structOptions with the command that binds it)",
		"structOptions lists pipeline/image, which has no option struct: drop the line",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planted violations reported as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
