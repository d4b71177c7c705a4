package importrules

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/nginx-forge/nginx-forge/pipeline/lock"
)

// The component-table rule (issue 49: "a rule test keeps new per-component tables from
// growing back"): a component's facts live in one row of lock's component table
// (pipeline/lock/components.go, lock.Specs). No program file outside it keeps a map literal
// keyed by a component: a key that is one of lock's component-name constants (lock.Nginx,
// or Nginx inside package lock), or a string naming a component as the lock, a flag or
// --modules spells it ("aws_lc", "aws-lc", "brotli"). A new fact about components is a new
// Spec field, which every component then has to answer.

// componentTableFile is the table itself.
const componentTableFile = "pipeline/lock/components.go"

// perComponentMapsAllowed are the map literals keyed by a component's spelling that are not
// facts of the component, by "file: key", with the reason. An entry no map uses any more
// fails the test, so the list only shrinks.
var perComponentMapsAllowed = map[string]string{
	"pipeline/image/dpkg_copyright.go: zlib":    dep5Reason,
	"pipeline/image/dpkg_copyright.go: openssl": dep5Reason,
	"pipeline/advisory/advisory.go: nginx":      advisoryReason,
	"pipeline/advisory/advisory.go: openssl":    advisoryReason,
	"pipeline/bench/encoding.go: zstd":          "the benchmark's compression level per content-coding (br, zstd), the shipped config's; keyed by encoding, which zstd shares with the component",
}

const (
	dep5Reason     = "Debian copyright files' licence short names (the zlib and OpenSSL licences) mapped to SPDX, not the components"
	advisoryReason = "the severity words of each upstream's advisory feed: advisories are data of their feeds (issue 46), and the feed parser owns its vocabulary"
)

// componentSpellings are the strings that name a component: its lock name, its flag
// spelling and its module's --modules name.
func componentSpellings() map[string]bool {
	out := map[string]bool{}
	for _, s := range lock.Specs() {
		out[s.Name] = true
		out[lock.FlagName(s.Name)] = true
		if s.Module != "" {
			out[s.Module] = true
		}
	}
	return out
}

// componentConsts are the names of lock's constants whose value is a component name
// (Nginx, ZstdNginxModule, ...), read from package lock's files.
func componentConsts(files map[string]*ast.File) map[string]bool {
	names := map[string]bool{}
	for _, s := range lock.Specs() {
		names[s.Name] = true
	}
	out := map[string]bool{}
	for rel, f := range files {
		if path.Dir(rel) != "pipeline/lock" {
			continue
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if bl, ok := vs.Values[i].(*ast.BasicLit); ok && bl.Kind == token.STRING {
							if v, err := strconv.Unquote(bl.Value); err == nil && names[v] {
								out[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return out
}

// lockImportName is the name file f imports pipeline/lock under, "" when it does not.
func lockImportName(f *ast.File) string {
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == module+"/pipeline/lock" {
			if im.Name != nil {
				return im.Name.Name
			}
			return "lock"
		}
	}
	return ""
}

// componentKey is the component spelling key k stands for in a file of package pkgDir
// importing lock as lockName, or "".
func componentKey(k ast.Expr, pkgDir, lockName string, consts, spellings map[string]bool) string {
	switch k := k.(type) {
	case *ast.SelectorExpr:
		if x, ok := k.X.(*ast.Ident); ok && lockName != "" && x.Name == lockName && consts[k.Sel.Name] {
			return lockName + "." + k.Sel.Name
		}
	case *ast.Ident:
		if pkgDir == "pipeline/lock" && consts[k.Name] {
			return k.Name
		}
	case *ast.BasicLit:
		if v, err := strconv.Unquote(k.Value); err == nil && k.Kind == token.STRING && spellings[v] {
			return v
		}
	}
	return ""
}

// perComponentMaps lists the map literals keyed by a component in files (path relative to
// the repository root -> parsed non-test program file), as "file:line: ..." breaks, and the
// allowed entries ("file: key") that were seen.
func perComponentMaps(files map[string]*ast.File, fset *token.FileSet, allowed map[string]string) (breaks, seen []string) {
	consts, spellings := componentConsts(files), componentSpellings()
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	sort.Strings(rels)
	for _, rel := range rels {
		if rel == componentTableFile {
			continue
		}
		f, dir, lockName := files[rel], path.Dir(rel), lockImportName(files[rel])
		ast.Inspect(f, func(n ast.Node) bool {
			cl, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if _, isMap := cl.Type.(*ast.MapType); !isMap {
				return true
			}
			for _, e := range cl.Elts {
				kv, ok := e.(*ast.KeyValueExpr)
				if !ok {
					continue
				}
				key := componentKey(kv.Key, dir, lockName, consts, spellings)
				if key == "" {
					continue
				}
				spelled := strings.TrimPrefix(key, lockName+".")
				if _, ok := allowed[rel+": "+spelled]; ok {
					if !slices.Contains(seen, rel+": "+spelled) {
						seen = append(seen, rel+": "+spelled)
					}
					continue
				}
				breaks = append(breaks, fmt.Sprintf("%s:%d: a map keyed by component %s: give the fact a field of lock.Spec in %s and read it with lock.SpecOf",
					rel, fset.Position(kv.Pos()).Line, key, componentTableFile))
			}
			return true
		})
	}
	return breaks, seen
}

// parsedProductFiles parses productFiles (non-test Go files of pipeline/ and ci/, test
// support left out).
func parsedProductFiles(t *testing.T) (map[string]*ast.File, *token.FileSet) {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]*ast.File{}
	for rel, src := range productFiles(t) {
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		out[rel] = f
	}
	return out, fset
}

func TestNoPerComponentMaps(t *testing.T) {
	files, fset := parsedProductFiles(t)
	if files[componentTableFile] == nil {
		t.Fatalf("the walker did not read %s: is RepoRoot right, or did the table move?", componentTableFile)
	}
	breaks, seen := perComponentMaps(files, fset, perComponentMapsAllowed)
	for _, b := range breaks {
		t.Error(b)
	}
	for k := range perComponentMapsAllowed {
		if !slices.Contains(seen, k) {
			t.Errorf("perComponentMapsAllowed has %q, which no map uses any more: remove it", k)
		}
	}
}

// TestNoPerComponentMapsCanFail plants the shapes the table replaced beside the real tree
// (image's CPE map keyed by lock.Nginx, lock's own optionalRequires keyed by NgxBrotli,
// upstream's signature map through a renamed import, a flag-spelled key) and wants exactly
// those reported; a map keyed by architecture and a switch on component names are not.
func TestNoPerComponentMapsCanFail(t *testing.T) {
	files, fset := parsedProductFiles(t)
	plant := map[string]string{
		"pipeline/image/planted.go": `package image
import "` + module + `/pipeline/lock"
var cpe = map[string][][2]string{
	lock.Nginx: {{"f5", "nginx"}},
}
var arch = map[string]string{"amd64": "x86_64"}
func script(n string) string {
	switch n {
	case lock.Brotli:
		return "b"
	}
	return ""
}
`,
		"pipeline/lock/planted.go": "package lock\nvar requires = map[string]string{NgxBrotli: Brotli}\n",
		"pipeline/upstream/planted.go": `package upstream
import l "` + module + `/pipeline/lock"
var sig = map[string]string{l.Zstd: ".sig"}
`,
		"ci/planted.go": "package main\nvar tlsTags = map[string]string{\"aws-lc\": \"-aws-lc\"}\n",
	}
	for rel, src := range plant {
		f, err := parser.ParseFile(fset, rel, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		files[rel] = f
	}
	breaks, _ := perComponentMaps(files, fset, perComponentMapsAllowed)
	hint := ": give the fact a field of lock.Spec in " + componentTableFile + " and read it with lock.SpecOf"
	want := []string{
		"ci/planted.go:2: a map keyed by component aws-lc" + hint,
		"pipeline/image/planted.go:4: a map keyed by component lock.Nginx" + hint,
		"pipeline/lock/planted.go:2: a map keyed by component NgxBrotli" + hint,
		"pipeline/upstream/planted.go:3: a map keyed by component l.Zstd" + hint,
	}
	if strings.Join(breaks, "\n") != strings.Join(want, "\n") {
		t.Errorf("planted maps reported as\n%s\nwant\n%s", strings.Join(breaks, "\n"), strings.Join(want, "\n"))
	}
	// With an empty allowance, the allowed maps of the real tree are reported too.
	all, _ := perComponentMaps(files, fset, nil)
	if len(all) != len(want)+len(perComponentMapsAllowed) {
		t.Errorf("without the allowance %d maps reported, want %d:\n%s", len(all), len(want)+len(perComponentMapsAllowed), strings.Join(all, "\n"))
	}
}
