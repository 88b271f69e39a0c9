// Package layout holds the repository's import rules: product code never
// depends on test support, and the pipeline's layers point one way.
package layout

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/netreconcile/netreconcile"

// repoRoot is the module's root: this package sits two levels below it.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

// packages returns every package directory of the module (relative, slash
// separated) with the module imports of its non-test files.
func packages(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
			return filepath.SkipDir
		}
		bp, err := build.ImportDir(path, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		var ours []string
		for _, imp := range bp.Imports {
			if imp == module || strings.HasPrefix(imp, module+"/") {
				ours = append(ours, strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			}
		}
		out[filepath.ToSlash(rel)] = ours
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testSupport reports whether a package exists for tests only: everything
// under test/ (the walk and its oracle, the namespace helpers, benchmark
// mains, the e2e and integration suites) and the in-memory kernel.
func testSupport(pkg string) bool {
	return pkg == "test" || strings.HasPrefix(pkg, "test/") || pkg == "internal/kernel/kerneltest"
}

// TestProductNeverImportsTestSupport: what ships (cmd/ and internal/, but the
// fake kernel) is built from product packages alone.
func TestProductNeverImportsTestSupport(t *testing.T) {
	pkgs := packages(t, repoRoot(t))
	if len(pkgs) < 20 {
		t.Fatalf("found %d packages: the walk of the tree is broken", len(pkgs))
	}
	var product int
	for pkg, imps := range pkgs {
		if testSupport(pkg) {
			continue
		}
		product++
		for _, imp := range imps {
			if testSupport(imp) {
				t.Errorf("product package %s imports test support %s", pkg, imp)
			}
		}
	}
	if product == 0 {
		t.Fatal("no product package found")
	}
}

// closure returns every package of ours that pkg imports, directly or not.
func closure(pkgs map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, imp := range pkgs[p] {
			if !seen[imp] {
				seen[imp] = true
				walk(imp)
			}
		}
	}
	walk(pkg)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// TestPipelineLayers holds the layering: the model stands on leaf packages
// only, so that every stage can use it without pulling in another stage; the
// diff is pure (no kernel, no files); and the desired stage builds the model
// without the allocator.
func TestPipelineLayers(t *testing.T) {
	pkgs := packages(t, repoRoot(t))
	for _, p := range closure(pkgs, "internal/model") {
		if deps := closure(pkgs, p); len(deps) > 0 {
			t.Errorf("internal/model imports %s, which is no leaf: it imports %v", p, deps)
		}
	}
	for _, p := range closure(pkgs, "internal/diff") {
		switch p {
		case "internal/kernel", "internal/apply", "internal/engine", "internal/ledger", "internal/statedir", "internal/desired", "internal/actual":
			t.Errorf("internal/diff imports %s: the diff takes two models and returns a plan, nothing else", p)
		}
	}
	if deps := closure(pkgs, "internal/desired"); slices.Contains(deps, "internal/ipam") {
		t.Errorf("internal/desired imports internal/ipam (its packages of ours: %v); the pool definition is in internal/model", deps)
	}
}
