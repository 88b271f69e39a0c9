package model_test

import (
	"go/build"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/netreconcile/netreconcile/"

// ourImports returns the packages of this module that pkg (a path under internal/) imports,
// directly or not, read from the source files of the build (tests left out).
func ourImports(t *testing.T, pkg string) []string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		bp, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(p, module)), 0)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		for _, imp := range bp.Imports {
			if strings.HasPrefix(imp, module) && !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(module + pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, strings.TrimPrefix(p, module))
	}
	slices.Sort(out)
	return out
}

// TestImportRules holds the layering: the model stands on leaf packages only (the pool
// definition, the nftables rule syntax), so that every stage can use it without pulling in
// another stage; and the desired stage builds the model without the allocator.
func TestImportRules(t *testing.T) {
	for _, p := range ourImports(t, "internal/model") {
		if deps := ourImports(t, p); len(deps) > 0 {
			t.Errorf("internal/model imports %s, which is no leaf: it imports %v", p, deps)
		}
	}
	if deps := ourImports(t, "internal/desired"); slices.Contains(deps, "internal/ipam") {
		t.Errorf("internal/desired imports internal/ipam (its packages of ours: %v); the pool definition is in internal/pooldef", deps)
	}
}
