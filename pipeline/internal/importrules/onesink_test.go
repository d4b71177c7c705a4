package importrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"sort"
	"strings"
	"testing"
)

// The one-sink rule (issue 38: "every package reports through progress.Sink with typed
// events; no logf parameters, no direct writes to stderr outside the one renderer"), over the
// program's Go files (pipeline/ and ci/, tests and test support excluded):
//
//   - No printf-shaped function value: no parameter, result, struct field or named type of
//     type func(string, ...any). A package reports by sending events to a progress.Sink.
//   - No printf wrapper around a sink and no second callback type for events
//     (onesink_shapes_test.go): free text is sink.Send(progress.Detailf(...)) where it is said.
//   - os.Stderr only inside a func main: the program's entry points hand it to their run
//     function and nothing else names it.
//   - In ci/, nothing writes to the stderr it is given (fmt.Fprint*(stderr, ...),
//     stderr.Write) except the renderer, ci/log.go, and run in ci/main.go (a command's usage
//     and its one error line); every other line is a progress event.

// sinkRendererFiles may write to ci's stderr.
var sinkRendererFiles = map[string]bool{"ci/log.go": true, "ci/main.go": true}

func printfFunc(t ast.Expr) bool {
	ft, ok := t.(*ast.FuncType)
	if !ok || ft.Results != nil && len(ft.Results.List) > 0 || ft.Params == nil {
		return false
	}
	var types []ast.Expr
	for _, f := range ft.Params.List {
		n := max(len(f.Names), 1)
		for range n {
			types = append(types, f.Type)
		}
	}
	if len(types) != 2 {
		return false
	}
	s, ok := types[0].(*ast.Ident)
	if !ok || s.Name != "string" {
		return false
	}
	e, ok := types[1].(*ast.Ellipsis)
	if !ok {
		return false
	}
	switch el := e.Elt.(type) {
	case *ast.Ident:
		return el.Name == "any"
	case *ast.InterfaceType:
		return el.Methods == nil || len(el.Methods.List) == 0
	}
	return false
}

// sinkViolations lists every break of the one-sink rule in files (path relative to the
// repository root -> parsed file, non-test files only).
func sinkViolations(files map[string]*ast.File, fset *token.FileSet) []string {
	var out []string
	for rel, f := range files {
		dir := path.Dir(rel)
		if exemptFromOneSink(dir) {
			continue
		}
		at := func(n ast.Node) string { return fmt.Sprintf("%s:%d", rel, fset.Position(n.Pos()).Line) }
		// os.Stderr inside a func main is the entry point's.
		var mains []*ast.FuncDecl
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Name.Name == "main" && f.Name.Name == "main" {
				mains = append(mains, fd)
			}
		}
		inMain := func(n ast.Node) bool {
			for _, m := range mains {
				if n.Pos() >= m.Pos() && n.End() <= m.End() {
					return true
				}
			}
			return false
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.Field:
				if printfFunc(n.Type) {
					out = append(out, at(n)+": a printf function as a parameter, result or field: send progress events to a progress.Sink instead")
				}
				if dir != progressPkg && takesEvent(n.Type) {
					out = append(out, at(n)+": a callback taking progress.Event beside progress.Sink: pass the progress.Sink itself")
				}
			case *ast.TypeSpec:
				if printfFunc(n.Type) {
					out = append(out, at(n)+": a printf function type: send progress events to a progress.Sink instead")
				}
				if dir != progressPkg && takesEvent(n.Type) {
					out = append(out, at(n)+": a callback type beside progress.Sink: take a progress.Sink (progress.SinkFunc for a function)")
				}
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "os" && n.Sel.Name == "Stderr" && !inMain(n) {
					out = append(out, at(n)+": os.Stderr outside a func main: report through a progress.Sink (ci renders it in log.go)")
				}
			case *ast.CallExpr:
				if strings.HasPrefix(rel, "ci/") && !sinkRendererFiles[rel] && writesStderr(n) {
					out = append(out, at(n)+": writes to stderr itself: send a progress event (a Note: progress.Infof) to the command's sink (newLog)")
				}
			}
			return true
		})
	}
	out = append(out, sinkWrappers(files, fset)...)
	sort.Strings(out)
	return out
}

// writesStderr: fmt.Fprint*(stderr, ...), io.WriteString(stderr, ...) or stderr.Write(...).
func writesStderr(c *ast.CallExpr) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	isStderr := func(e ast.Expr) bool { id, ok := e.(*ast.Ident); return ok && id.Name == "stderr" }
	if isStderr(sel.X) && (sel.Sel.Name == "Write" || sel.Sel.Name == "WriteString") {
		return true
	}
	pkg, ok := sel.X.(*ast.Ident)
	if !ok || len(c.Args) == 0 || !isStderr(c.Args[0]) {
		return false
	}
	return pkg.Name == "fmt" && strings.HasPrefix(sel.Sel.Name, "Fprint") || pkg.Name == "io" && sel.Sel.Name == "WriteString"
}

// programFiles parses the non-test Go files of pipeline/ and ci/ into one file set.
func programFiles(t *testing.T) (map[string]*ast.File, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	for _, s := range treeSources(t) {
		if strings.HasSuffix(s.rel, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, s.rel, s.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parsing %s: %v", s.rel, err)
		}
		out[s.rel] = f
	}
	return out, fset
}

func TestOneSink(t *testing.T) {
	files, fset := programFiles(t)
	if files["ci/log.go"] == nil || files["pipeline/progress/progress.go"] == nil {
		t.Fatal("the walker did not read ci/log.go and pipeline/progress: is RepoRoot right?")
	}
	for _, v := range sinkViolations(files, fset) {
		t.Error(v)
	}
}

// TestOneSinkCanFail plants each kind of break beside the real tree (the shapes issue 38
// removed: ocirun's logger field, the host engine's WithLogf, bench's direct stderr writer,
// ci dockerfile's warning; source's WithLogf, which issue 40 removed from the last packages
// that were exempt; issue 51's printf wrappers around a sink, a wrapper of that wrapper, and
// engine.Progress beside the Sink) and wants exactly those reported; the same shapes in a
// test support package, the renderer and a func main are not, nor is a printf-shaped
// function that makes an error or writes into a buffer.
func TestOneSinkCanFail(t *testing.T) {
	files, fset := programFiles(t)
	plant := map[string]string{
		"pipeline/planted/fields.go": `package planted
type options struct {
	dir  string
	logf func(string, ...any)
}
func WithLogf(logf func(format string, args ...interface{})) Option { return nil }
type Printf func(string, ...any)
func fine(s string, n ...int) {}
`,
		"pipeline/planted/stderr.go": `package planted
import ("fmt"; "os")
func warn(s string) { fmt.Fprintln(os.Stderr, s) }
`,
		"ci/planted.go": `package main
import "fmt"
func emit(stderr io.Writer, w string) {
	fmt.Fprintln(stderr, "warning:", w)
	stderr.Write([]byte(w))
}
func main() { run(os.Stderr) }
`,
		"pipeline/planted/wrappers.go": `package planted
type build struct{ sink progress.Sink }
func (b *build) logf(format string, a ...any) {
	b.sink.Send(progress.Note{Level: progress.Info, Text: fmt.Sprintf(format, a...)})
}
func detail(s progress.Sink, format string, args ...any) { s.Send(progress.Detailf(format, args...)) }
func (b *build) vlogf(format string, args ...any) { detail(b.sink, format, args...) }
func (b *build) wrapped(format string, args ...any) { b.vlogf(format, args...) }
func refuse(entry, format string, args ...any) error { return fmt.Errorf(entry+": "+format, args...) }
func (r *renderer) w(format string, a ...any) { fmt.Fprintf(&r.b, format, a...) }
func run(sink progress.Sink) {
	say := func(format string, args ...any) { sink.Send(progress.Infof(format, args...)) }
	sink.Send(progress.Detailf("as it should be: %d", 1))
	_ = progress.SinkFunc(func(e progress.Event) { sink.Send(e) })
	say("x")
}
type Progress func(progress.Event)
type reporter interface{ Report(ctx context.Context, e progress.Event) }
type options struct{ report func(progress.Event) }
func stages(platform string) func(e progress.Event) { return nil }
`,
		"pipeline/progress/planted.go":            "package progress\ntype SinkFunc func(Event)\nfunc Detailf(format string, args ...any) Note { return Note{} }\n",
		"pipeline/source/planted.go":              "package source\nfunc WithLogf(logf func(string, ...any)) {}\n",
		"pipeline/testsupport/planted/planted.go": "package planted\nimport \"os\"\nvar logf func(string, ...any) = nil\nvar w = os.Stderr\nfunc (o *O) note(f string, a ...any) { o.Progress.Send(progress.Detailf(f, a...)) }\ntype P func(progress.Event)\n",
		"ci/log.go": `package main
func (s *lineSink) note(stderr io.Writer) { fmt.Fprintln(stderr, "x") }
`,
	}
	for rel, src := range plant {
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		files[rel] = f
	}
	got := sinkViolations(files, fset)
	want := []string{
		"ci/planted.go:4: writes to stderr itself: send a progress event (a Note: progress.Infof) to the command's sink (newLog)",
		"ci/planted.go:5: writes to stderr itself: send a progress event (a Note: progress.Infof) to the command's sink (newLog)",
		"pipeline/planted/fields.go:4: a printf function as a parameter, result or field: send progress events to a progress.Sink instead",
		"pipeline/planted/fields.go:6: a printf function as a parameter, result or field: send progress events to a progress.Sink instead",
		"pipeline/planted/fields.go:7: a printf function type: send progress events to a progress.Sink instead",
		"pipeline/planted/stderr.go:3: os.Stderr outside a func main: report through a progress.Sink (ci renders it in log.go)",
		"pipeline/planted/wrappers.go:12: a printf wrapper around a sink: send progress.Detailf/Infof/Warningf(...) to the progress.Sink where the line is said",
		"pipeline/planted/wrappers.go:17: a callback type beside progress.Sink: take a progress.Sink (progress.SinkFunc for a function)",
		"pipeline/planted/wrappers.go:18: a callback taking progress.Event beside progress.Sink: pass the progress.Sink itself",
		"pipeline/planted/wrappers.go:19: a callback taking progress.Event beside progress.Sink: pass the progress.Sink itself",
		"pipeline/planted/wrappers.go:20: a callback taking progress.Event beside progress.Sink: pass the progress.Sink itself",
		"pipeline/planted/wrappers.go:3: a printf wrapper around a sink: send progress.Detailf/Infof/Warningf(...) to the progress.Sink where the line is said",
		"pipeline/planted/wrappers.go:6: a printf wrapper around a sink: send progress.Detailf/Infof/Warningf(...) to the progress.Sink where the line is said",
		"pipeline/planted/wrappers.go:7: a printf wrapper around a sink: send progress.Detailf/Infof/Warningf(...) to the progress.Sink where the line is said",
		"pipeline/planted/wrappers.go:8: a printf wrapper around a sink: send progress.Detailf/Infof/Warningf(...) to the progress.Sink where the line is said",
		"pipeline/source/planted.go:2: a printf function as a parameter, result or field: send progress events to a progress.Sink instead",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("planted breaks reported as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
