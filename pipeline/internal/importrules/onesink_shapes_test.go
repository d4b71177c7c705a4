package importrules

import (
	"fmt"
	"go/ast"
	"go/token"
	"path"
	"sort"
	"strings"
)

// Two shapes the one-sink rule's first form let through (issue 51: 16 printf wrappers made
// 106 calls beside 9 typed events, and engine.Progress was a callback type beside
// progress.Sink). Free text is a leveled progress.Note, built where it is said
// (progress.Detailf, Infof, Warningf) and sent to the Sink; so outside pipeline/progress:
//
//   - No printf-shaped function (its last parameters a string and ...any) sends to a sink:
//     its body calls no Send, names nothing of package progress, and calls no other such
//     function of its package (a wrapper of a wrapper). A printf-shaped function that
//     returns an error, or writes a file's text into a buffer, is no report and stays.
//   - No second callback type for events: no named type, field, parameter or result whose
//     type is a func or an interface method taking a progress.Event. Events travel as
//     progress.Sink (a function literal becomes one as progress.SinkFunc).

// progressPkg is the package that defines the events and the one Sink.
const progressPkg = "pipeline/progress"

// printfShaped: the function's last two parameters are a string and ...any.
func printfShaped(ft *ast.FuncType) bool {
	if ft.Params == nil {
		return false
	}
	var types []ast.Expr
	for _, f := range ft.Params.List {
		for range max(len(f.Names), 1) {
			types = append(types, f.Type)
		}
	}
	if len(types) < 2 {
		return false
	}
	s, ok := types[len(types)-2].(*ast.Ident)
	if !ok || s.Name != "string" {
		return false
	}
	return variadicAny(types[len(types)-1])
}

func variadicAny(t ast.Expr) bool {
	e, ok := t.(*ast.Ellipsis)
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

// printfFn is one printf-shaped function of the program: a declaration, or a literal.
type printfFn struct {
	dir, name string // name: "" for a literal
	pos       string
	body      *ast.BlockStmt
}

// reportsDirectly: body calls a Send method or names package progress.
func reportsDirectly(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Send" {
				found = true
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "progress" {
				found = true
			}
		}
		return !found
	})
	return found
}

// callsAny: body calls a function or method named in names.
func callsAny(body *ast.BlockStmt, names map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok {
			switch f := c.Fun.(type) {
			case *ast.Ident:
				found = found || names[f.Name]
			case *ast.SelectorExpr:
				found = found || names[f.Sel.Name]
			}
		}
		return !found
	})
	return found
}

// sinkWrappers lists every printf-shaped function (outside pipeline/progress, test support
// excluded as in sinkViolations) that sends to a sink, directly or through another.
func sinkWrappers(files map[string]*ast.File, fset *token.FileSet) []string {
	var fns []printfFn
	for rel, f := range files {
		dir := path.Dir(rel)
		if exemptFromOneSink(dir) || dir == progressPkg {
			continue
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body != nil && printfShaped(n.Type) {
					fns = append(fns, printfFn{dir, n.Name.Name, fmt.Sprintf("%s:%d", rel, fset.Position(n.Pos()).Line), n.Body})
				}
			case *ast.FuncLit:
				if printfShaped(n.Type) {
					fns = append(fns, printfFn{dir, "", fmt.Sprintf("%s:%d", rel, fset.Position(n.Pos()).Line), n.Body})
				}
			}
			return true
		})
	}
	wrapper := make([]bool, len(fns))
	byDir := map[string]map[string]bool{}
	for changed := true; changed; {
		changed = false
		for i, fn := range fns {
			if wrapper[i] || !(reportsDirectly(fn.body) || callsAny(fn.body, byDir[fn.dir])) {
				continue
			}
			wrapper[i], changed = true, true
			if fn.name != "" {
				if byDir[fn.dir] == nil {
					byDir[fn.dir] = map[string]bool{}
				}
				byDir[fn.dir][fn.name] = true
			}
		}
	}
	var out []string
	for i, fn := range fns {
		if wrapper[i] {
			out = append(out, fn.pos+": a printf wrapper around a sink: send progress.Detailf/Infof/Warningf(...) to the progress.Sink where the line is said")
		}
	}
	sort.Strings(out)
	return out
}

// takesEvent: t is a func type taking a progress.Event. An interface's method is a Field
// of such a type, so an interface with a method taking an event is found by its method.
func takesEvent(t ast.Expr) bool {
	ft, ok := t.(*ast.FuncType)
	if !ok {
		return false
	}
	for _, p := range ft.Params.List {
		if sel, ok := p.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "Event" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "progress" {
				return true
			}
		}
	}
	return false
}

// exemptFromOneSink: test support, which tests alone import, may shape its helpers freely.
func exemptFromOneSink(dir string) bool {
	return strings.HasPrefix(dir, "pipeline/testsupport") || strings.HasPrefix(dir, "pipeline/workflowtest")
}
