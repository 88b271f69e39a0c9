package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
)

const (
	docsPath   = "../../../docs/config.md"
	schemaPath = "../../../docs/schema/config.json"
)

// TestCommittedSchemaIsGenerated: docs/schema/config.json is what the
// loader's types and docs/config.md make now.
func TestCommittedSchemaIsGenerated(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(doc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/schema/config.json is out of date with the loader's types or docs/config.md: run go generate ./internal/desired (make schema) and commit it")
	}
}

// TestEveryKeyDocumented: every leaf key of the loader's types has a row
// in a table of docs/config.md, under its section.
func TestEveryKeyDocumented(t *testing.T) {
	doc, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	rows := parseRows(doc)
	keys := desired.SchemaKeys()
	if len(keys) < 100 {
		t.Fatalf("only %d keys: the walk of the types is broken", len(keys))
	}
	var missing []string
	for _, k := range keys {
		if lookup(rows, k) == nil {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d of %d keys have no row in docs/config.md:\n  %s", len(missing), len(keys), strings.Join(missing, "\n  "))
	}
}
