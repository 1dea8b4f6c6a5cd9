package actoviq_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Godoc is the manual: every exported identifier of every public package
// (types, their exported fields and methods, functions, constants and
// variables) carries a doc comment. A constant or variable inside a
// documented group counts as documented.
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	fset := token.NewFileSet()
	var missing []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "internal" || name == "node_modules" || name == "bench") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		missing = append(missing, undocumented(fset, f)...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("undocumented: %s", m)
	}
}

func undocumented(fset *token.FileSet, f *ast.File) []string {
	var out []string
	at := func(n ast.Node, what string) {
		out = append(out, fset.Position(n.Pos()).String()+" "+what)
	}
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() || d.Doc != nil {
				continue
			}
			if d.Recv != nil {
				recv := receiverName(d.Recv.List[0].Type)
				if !ast.IsExported(recv) || wellKnown[d.Name.Name] {
					continue
				}
				at(d, recv+"."+d.Name.Name)
				continue
			}
			at(d, d.Name.Name)
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					if s.Doc == nil && d.Doc == nil {
						at(s, "type "+s.Name.Name)
					}
					if st, ok := s.Type.(*ast.StructType); ok {
						var lastDoc string // the nearest field doc above, which may name this field too
						for _, fld := range st.Fields.List {
							if fld.Doc != nil || fld.Comment != nil {
								lastDoc = fld.Doc.Text() + fld.Comment.Text()
								continue
							}
							if len(fld.Names) > 0 && namedIn(lastDoc, fld.Names[0].Name) {
								continue
							}
							for _, n := range fld.Names {
								if n.IsExported() {
									at(fld, s.Name.Name+"."+n.Name)
								}
							}
						}
					}
					if it, ok := s.Type.(*ast.InterfaceType); ok {
						for _, m := range it.Methods.List {
							if m.Doc != nil || m.Comment != nil {
								continue
							}
							for _, n := range m.Names {
								if n.IsExported() {
									at(m, s.Name.Name+"."+n.Name)
								}
							}
						}
					}
				case *ast.ValueSpec:
					if d.Doc != nil || s.Doc != nil || s.Comment != nil {
						continue
					}
					for _, n := range s.Names {
						if n.IsExported() {
							at(s, n.Name)
						}
					}
				}
			}
		}
	}
	return out
}

// namedIn reports whether a doc comment names the field as a word
// ("From and To are …" documents To as well).
func namedIn(doc, name string) bool {
	for _, w := range strings.FieldsFunc(doc, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		if w == name {
			return true
		}
	}
	return false
}

// wellKnown methods implement a standard interface whose doc says it all
// (error, fmt.Stringer, errors.Is/As/Unwrap, the encoding interfaces).
var wellKnown = map[string]bool{"Error": true, "Unwrap": true, "Is": true, "As": true, "String": true,
	"MarshalJSON": true, "UnmarshalJSON": true, "MarshalText": true, "UnmarshalText": true}

func receiverName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return receiverName(t.X)
	case *ast.IndexExpr:
		return receiverName(t.X)
	case *ast.IndexListExpr:
		return receiverName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
