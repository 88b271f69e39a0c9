package desired

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The fuzz targets check three things on every input:
//
//   - the loader is deterministic: the same file gives the same model and
//     the same errors;
//   - the loader agrees with yaml.v3 about what the file is: a file the
//     loader accepts is one YAML document yaml.v3 reads to its end;
//   - nothing panics, as a main file or as a drop-in, and every error has
//     file:line:col.
//
// FuzzLoad mutates bytes, seeded with every example and every YAML snippet
// of docs/config.md; FuzzLoadGenerated builds files from the schema with
// what YAML allows (genyaml_test.go), so that the mutator's bytes become
// anchors, tags, comments, line breaks and styles in valid places.
// FuzzSideFiles (sidefile_test.go) does the same for the side files.

func FuzzLoad(f *testing.F) {
	for _, s := range seedFiles(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLoad(t, data)
	})
}

func FuzzLoadGenerated(f *testing.F) {
	for _, s := range [][]byte{nil, {0}, {1, 2, 3, 4, 5, 6, 7, 8}, bytes.Repeat([]byte{7, 3, 250, 1}, 64), []byte("routes flow block anchors tags comments")} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, choices []byte) {
		checkLoad(t, genYAML(choices))
	})
}

// checkLoad is what both targets require of one file.
func checkLoad(t *testing.T, data []byte) {
	t.Helper()
	srcs := []Source{{Name: "f.yaml", Data: data}}
	first, firstErr := ParseWith(srcs, noDisk)
	again, againErr := ParseWith(srcs, noDisk)
	if !reflect.DeepEqual(firstErr, againErr) {
		t.Fatalf("file %q:\nfirst load: %v\nsecond:     %v", data, firstErr, againErr)
	}
	if !reflect.DeepEqual(first, again) {
		t.Fatalf("file %q: a second load builds another model", data)
	}
	checkErrorPositions(t, data, firstErr, "f.yaml")
	if firstErr == nil {
		// Accepted: yaml.v3 must read exactly one document, to the end.
		dec := yaml.NewDecoder(bytes.NewReader(data))
		var doc, extra yaml.Node
		if err := dec.Decode(&doc); err != nil {
			t.Fatalf("file %q accepted, yaml.v3: %v", data, err)
		}
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			t.Fatalf("file %q accepted, yaml.v3 reads more after the first document: %v", data, err)
		}
	} else {
		var doc yaml.Node
		if yerr := yaml.Unmarshal(data, &doc); yerr != nil && !strings.Contains(firstErr.Error(), "YAML") {
			t.Fatalf("file %q: yaml.v3 fails (%v), the loader says %v", data, yerr, firstErr)
		}
	}
	// The same bytes as a drop-in: the merge code sees every section too.
	_, err := ParseWith([]Source{{Name: "main.yaml", Data: []byte("version: 1\n")}, {Name: "conf.d/f.yaml", Data: data}}, noDisk)
	checkErrorPositions(t, data, err, "")
}

// noDisk reads no side file: a made-up file may name any path, and what
// the machine holds there is no part of the test.
var noDisk = Options{read: func(path string) ([]byte, error) {
	return nil, &os.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
}}

// checkErrorPositions: every error names a file, a line and a column from 1.
func checkErrorPositions(t *testing.T, data []byte, err error, file string) {
	t.Helper()
	if err == nil {
		return
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("file %q: error %v is not an Errors list", data, err)
	}
	for _, e := range es {
		if e.Pos.Line < 1 || e.Pos.Col < 1 || e.Pos.File == "" || file != "" && e.Pos.File != file {
			t.Fatalf("file %q: error without a position: %q", data, e.Error())
		}
	}
}

var yamlFence = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// seedFiles returns every example and every YAML snippet of the docs, and
// the cases of the regression tests.
func seedFiles(tb testing.TB) [][]byte {
	var out [][]byte
	ex, err := filepath.Glob("../../examples/*.yaml")
	if err != nil || len(ex) == 0 {
		tb.Fatalf("no examples: %v", err)
	}
	for _, p := range ex {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, b)
	}
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		tb.Fatal(err)
	}
	snippets := yamlFence.FindAllSubmatch(doc, -1)
	if len(snippets) < 10 {
		tb.Fatalf("only %d YAML snippets in docs/config.md", len(snippets))
	}
	for _, m := range snippets {
		s := m[1]
		out = append(out, s)
		if !bytes.HasPrefix(s, []byte("version:")) {
			out = append(out, append([]byte("version: 1\n"), s...))
		}
	}
	for _, c := range regressionFiles {
		out = append(out, []byte(c))
	}
	out = append(out, routesFile(50))
	return out
}
