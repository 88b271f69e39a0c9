package command

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/schema/stable-fields.txt from the schemas")

// stableGolden lists every stable field of every command's JSON: the 1.0
// contract (docs/json.md).
var stableGolden = filepath.Join(schemaDir, "stable-fields.txt")

// TestStableFieldsDoNotChange: the schemas' fields, each with its type
// (enumerations with their values), are the golden's. A stable field
// renamed, removed or given another type fails here, whatever the output
// does (schema_test.go holds the output to the schemas); a field added to
// a schema fails until the golden lists it (go test ./test/command -run
// TestStableFields -update), so that adding one is a decision too.
func TestStableFieldsDoNotChange(t *testing.T) {
	got := stableFields(t)
	if *update {
		head := "# The stable fields of netreconcile's JSON output (docs/json.md), from docs/schema/*.json:\n" +
			"# SCHEMA PATH TYPE. From 1.0 on, none is renamed, removed or given another type; fields and\n" +
			"# enumerated values may be added. test/command fails when the schemas and this list differ;\n" +
			"# go test ./test/command -run TestStableFields -update rewrites it after an addition.\n"
		if err := os.WriteFile(stableGolden, []byte(head+strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(stableGolden)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, l := range strings.Split(string(data), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			want = append(want, l)
		}
	}
	for _, w := range want {
		if !slices.ContainsFunc(got, func(g string) bool { return keeps(g, w) }) {
			t.Errorf("stable field changed or removed: %s\n(1.0 promises it never changes; add a new field instead)", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("field not in %s: %s\n(a new stable field: add it with go test ./test/command -run TestStableFields -update, and document it)", stableGolden, g)
		}
	}
	if len(got) < 100 {
		t.Errorf("only %d fields found in the schemas: the walk is broken", len(got))
	}
}

// keeps reports whether the field line got keeps the promise of the golden's
// line want: the same line, or the same field of an enumeration that has
// every value want lists and more (values may be added; none removed).
func keeps(got, want string) bool {
	if got == want {
		return true
	}
	gp, gv, gok := cutEnum(got)
	wp, wv, wok := cutEnum(want)
	if !gok || !wok || gp != wp {
		return false
	}
	for _, v := range wv {
		if !slices.Contains(gv, v) {
			return false
		}
	}
	return true
}

// cutEnum splits "apply .ops[].disruption enum(a|b)" into its field and
// values.
func cutEnum(line string) (field string, values []string, ok bool) {
	i := strings.LastIndex(line, " enum(")
	if i < 0 || !strings.HasSuffix(line, ")") {
		return "", nil, false
	}
	return line[:i], strings.Split(line[i+len(" enum("):len(line)-1], "|"), true
}

func TestStableFieldsEnumMayGrow(t *testing.T) {
	for _, c := range []struct {
		got, want string
		ok        bool
	}{
		{"x .a enum(p|q|r)", "x .a enum(p|q)", true},
		{"x .a enum(p|r)", "x .a enum(p|q)", false},
		{"x .b enum(p|q|r)", "x .a enum(p|q)", false},
		{"x .a string", "x .a enum(p|q)", false},
		{"x .a string", "x .a string", true},
	} {
		if keeps(c.got, c.want) != c.ok {
			t.Errorf("keeps(%q, %q) = %v", c.got, c.want, !c.ok)
		}
	}
}

// schemaWalk reads the schemas and lists their fields.
type schemaWalk struct {
	t     *testing.T
	files map[string]map[string]any
}

func stableFields(t *testing.T) []string {
	t.Helper()
	w := &schemaWalk{t: t, files: map[string]map[string]any{}}
	names, err := filepath.Glob(filepath.Join(schemaDir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		data, err := os.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		w.files[filepath.Base(n)] = m
	}
	var out []string
	for name, s := range w.files {
		if name == "defs.json" || name == configSchema {
			continue
		}
		for _, f := range w.fields(name, s, "") {
			out = append(out, strings.TrimSuffix(name, ".json")+" "+f)
		}
	}
	sort.Strings(out)
	return out
}

// resolve follows a $ref, relative to the file it is in: "defs.json#/$defs/x"
// or "#/$defs/x/properties/y".
func (w *schemaWalk) resolve(file, ref string) (string, map[string]any) {
	f, ptr, _ := strings.Cut(ref, "#")
	if f == "" {
		f = file
	}
	var node any = w.files[f]
	for _, p := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if p == "" {
			continue
		}
		m, ok := node.(map[string]any)
		if !ok {
			w.t.Fatalf("%s: bad $ref %s", file, ref)
		}
		node = m[p]
	}
	m, ok := node.(map[string]any)
	if !ok {
		w.t.Fatalf("%s: $ref %s resolves to nothing", file, ref)
	}
	return f, m
}

// typeOf describes a schema's type: "string", "integer|null",
// "enum(a|b)", "const(1)", "string(date-time)", "object", "array"...
func (w *schemaWalk) typeOf(file string, s map[string]any) string {
	if ref, ok := s["$ref"].(string); ok {
		return w.typeOf(w.resolve(file, ref))
	}
	if e, ok := s["enum"].([]any); ok {
		var vs []string
		for _, v := range e {
			vs = append(vs, fmt.Sprint(v))
		}
		return "enum(" + strings.Join(vs, "|") + ")"
	}
	if c, ok := s["const"]; ok {
		return fmt.Sprintf("const(%v)", c)
	}
	var ts []string
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[key].([]any); ok {
			for _, a := range alts {
				ts = append(ts, w.typeOf(file, a.(map[string]any)))
			}
		}
	}
	switch v := s["type"].(type) {
	case string:
		ts = append(ts, v)
	case []any:
		for _, x := range v {
			ts = append(ts, x.(string))
		}
	}
	for i, x := range ts {
		if f, ok := s["format"].(string); ok && x == "string" {
			ts[i] = "string(" + f + ")"
		}
	}
	sort.Strings(ts)
	return strings.Join(slices.Compact(ts), "|")
}

// fields lists the fields below schema s at path, with their types.
func (w *schemaWalk) fields(file string, s map[string]any, path string) []string {
	if ref, ok := s["$ref"].(string); ok {
		f, r := w.resolve(file, ref)
		return w.fields(f, r, path)
	}
	var out []string
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		if subs, ok := s[key].([]any); ok {
			for _, sub := range subs {
				out = append(out, w.fields(file, sub.(map[string]any), path)...)
			}
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			ps := p.(map[string]any)
			out = append(out, path+"."+name+" "+w.typeOf(file, ps))
			out = append(out, w.fields(file, ps, path+"."+name)...)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, w.fields(file, items, path+"[]")...)
	}
	if ap, ok := s["additionalProperties"].(map[string]any); ok {
		out = append(out, path+".* "+w.typeOf(file, ap))
		out = append(out, w.fields(file, ap, path+".*")...)
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// TestEveryKindInTheSchema: every kind of operation internal/diff declares
// (a constant of type Kind) is in the schema's enumeration, as the JSON
// writes it; a new kind without it would fail only the commands that plan
// one.
func TestEveryKindInTheSchema(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "internal", "diff", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no internal/diff: %v", err)
	}
	var kinds []string
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok || vs.Type == nil || fmt.Sprint(vs.Type) != "Kind" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					s, _ := strconv.Unquote(lit.Value)
					kinds = append(kinds, strings.ReplaceAll(s, " ", "_"))
				}
			}
			return true
		})
	}
	var defs struct {
		Defs struct {
			Kind struct {
				Enum []string `json:"enum"`
			} `json:"kind"`
		} `json:"$defs"`
	}
	data, err := os.ReadFile(filepath.Join(schemaDir, "defs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &defs); err != nil {
		t.Fatal(err)
	}
	slices.Sort(kinds)
	enum := slices.Sorted(slices.Values(defs.Defs.Kind.Enum))
	if len(kinds) < 10 || !slices.Equal(kinds, enum) {
		t.Errorf("internal/diff declares the kinds %v; docs/schema/defs.json enumerates %v", kinds, enum)
	}
}
