// Command schemagen writes the configuration's JSON Schema,
// docs/schema/config.json, from the loader's types (desired.JSONSchema)
// and, for each key, the description its row in docs/config.md gives, so
// that neither is written twice. go generate ./internal/desired runs it:
//
//	go run ./internal/desired/schemagen -docs docs/config.md -o docs/schema/config.json
//
// Its test fails when the committed file is not what it writes, and for a
// key of the schema that docs/config.md does not document.
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"

	"github.com/netreconcile/netreconcile/internal/desired"
)

func main() {
	docs := flag.String("docs", "../../docs/config.md", "the configuration reference, `FILE`")
	out := flag.String("o", "../../docs/schema/config.json", "write the schema to `FILE`")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: schemagen [-docs FILE] [-o FILE]")
		os.Exit(2)
	}
	doc, err := os.ReadFile(*docs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
	data, err := generate(doc)
	if err == nil {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "schemagen:", err)
		os.Exit(1)
	}
}

// generate is the schema file, from the reference's text.
func generate(doc []byte) ([]byte, error) {
	rows := parseRows(doc)
	s := desired.JSONSchema(func(path string) string {
		if r := lookup(rows, path); r != nil {
			return r.description()
		}
		return ""
	})
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(s); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// row is a row of a table of docs/config.md: the keys its first cell
// names (as key paths, NAME and KEY made "*"), the words of the heading
// it is under, and its cells by column name.
type row struct {
	keys    []string
	heading map[string]bool
	cells   map[string]string
}

var (
	codeRE    = regexp.MustCompile("`([^`]+)`")
	linkRE    = regexp.MustCompile(`\[([^\]]+)\]\([^)]*\)`)
	headingRE = regexp.MustCompile(`^#+\s+(.*)$`)
	wordRE    = regexp.MustCompile(`[a-z0-9_-]+`)
	placeRE   = regexp.MustCompile(`\b[A-Z][A-Z0-9]*\b`)
)

// parseRows reads every table row of the reference whose first cell names
// keys in code.
func parseRows(doc []byte) []*row {
	var rows []*row
	heading := map[string]bool{}
	var header []string
	lines := strings.Split(string(doc), "\n")
	inFence := false
	for i, line := range lines {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := headingRE.FindStringSubmatch(line); m != nil {
			heading = map[string]bool{}
			for _, w := range wordRE.FindAllString(strings.ToLower(m[1]), -1) {
				heading[stem(w)] = true
			}
			header = nil
			continue
		}
		if !strings.HasPrefix(line, "|") {
			header = nil
			continue
		}
		cells := splitRow(line)
		if header == nil {
			// A table starts with its header, then |---|.
			if i+1 < len(lines) && isSeparator(lines[i+1]) {
				header = make([]string, len(cells))
				for j, c := range cells {
					header[j] = strings.ToLower(strings.TrimSpace(c))
				}
			}
			continue
		}
		if isSeparator(line) {
			continue
		}
		r := &row{heading: heading, cells: map[string]string{}}
		for j, c := range cells {
			name := "meaning"
			if j < len(header) && header[j] != "" {
				name = header[j]
			}
			if j == 0 {
				name = "key"
			}
			r.cells[name] = strings.TrimSpace(c)
		}
		for _, m := range codeRE.FindAllStringSubmatch(cells[0], -1) {
			r.keys = append(r.keys, expandKey(m[1])...)
		}
		if len(r.keys) > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

// isSeparator reports whether line is a table's |---|---| line.
func isSeparator(line string) bool {
	line = strings.TrimSpace(line)
	return strings.HasPrefix(line, "|") && strings.Trim(line, "|-: ") == ""
}

// splitRow splits a table row into its cells; a | in code is text.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	var cells []string
	var cur strings.Builder
	code := false
	for _, r := range line {
		switch {
		case r == '`':
			code = !code
		case r == '|' && !code:
			cells = append(cells, cur.String())
			cur.Reset()
			continue
		}
		cur.WriteRune(r)
	}
	return append(cells, cur.String())
}

// expandKey turns a key cell's code into key paths: NAME and KEY are any
// name, and "a.b/c/d" is a.b, a.c and a.d.
func expandKey(s string) []string {
	s = placeRE.ReplaceAllString(s, "*")
	alts := strings.Split(s, "/")
	out := []string{alts[0]}
	prefix := ""
	if i := strings.LastIndex(alts[0], "."); i >= 0 {
		prefix = alts[0][:i+1]
	}
	for _, a := range alts[1:] {
		out = append(out, prefix+a)
	}
	return out
}

// lookup finds the row that documents the key at path: one naming the
// path, or its end after a dot, under a heading that shares a word with
// the path (the routes table's mtu is not a link's). Of two (a wireguard
// link's keys are in the links' table and WireGuard's), the one that says
// more.
func lookup(rows []*row, path string) *row {
	segs := map[string]bool{}
	for _, s := range strings.Split(strings.ReplaceAll(path, "[]", ""), ".") {
		segs[stem(s)] = true
	}
	var best *row
	for _, r := range rows {
		for _, k := range r.keys {
			if path != k && !strings.HasSuffix(path, "."+k) {
				continue
			}
			shared := false
			for w := range r.heading {
				shared = shared || segs[w]
			}
			if shared && (best == nil || len(r.description()) > len(best.description())) {
				best = r
			}
		}
	}
	return best
}

// stem is a word without its plural's s: "addresses" under "Taking an
// address from a pool", "pools" under "IPAM pools".
func stem(w string) string {
	switch {
	case strings.HasSuffix(w, "sses"):
		return strings.TrimSuffix(w, "es")
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return strings.TrimSuffix(w, "s")
	}
	return w
}

// description is the row as one paragraph of plain text: the type, what
// it means, the default.
func (r *row) description() string {
	var parts []string
	if t := clean(r.cells["type"]); t != "" {
		parts = append(parts, sentence(t))
	}
	if m := clean(r.cells["meaning"]); m != "" {
		parts = append(parts, sentence(m))
	}
	switch d := clean(r.cells["default"]); {
	case d == "" || d == "none":
	case strings.HasPrefix(d, "required"):
		parts = append(parts, sentence("R"+d[1:]))
	default:
		parts = append(parts, sentence("Default: "+d))
	}
	return strings.Join(parts, " ")
}

func clean(s string) string {
	s = linkRE.ReplaceAllString(s, "$1")
	return strings.TrimSpace(s)
}

func sentence(s string) string {
	if strings.HasSuffix(s, ".") || strings.HasSuffix(s, ")") && strings.HasSuffix(strings.TrimSuffix(s, ")"), ".") {
		return s
	}
	return s + "."
}
