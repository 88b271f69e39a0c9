package diff

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Compute is the only producer of Plan.Ops: no code outside this package
// assigns the field (an append included) or fills it in a Plan literal.
// Tests may build plans by hand.
func TestOnlyComputeProducesOps(t *testing.T) {
	fset := token.NewFileSet()
	for _, root := range []string{"../../internal", "../../cmd"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && filepath.Base(path) == "diff" && filepath.Base(filepath.Dir(path)) == "internal" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.AssignStmt:
					for _, l := range n.Lhs {
						if s, ok := l.(*ast.SelectorExpr); ok && s.Sel.Name == "Ops" {
							t.Errorf("%s: assigns Plan.Ops outside internal/diff", fset.Position(n.Pos()))
						}
					}
				case *ast.CompositeLit:
					if s, ok := n.Type.(*ast.SelectorExpr); ok && s.Sel.Name == "Plan" {
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Ops" {
									t.Errorf("%s: fills Plan.Ops outside internal/diff", fset.Position(n.Pos()))
								}
							}
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
