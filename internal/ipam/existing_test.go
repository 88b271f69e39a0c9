package ipam

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// Existing lists the pools with a registry file, of the registry's pools or
// not, and nothing else of ipam/ (what the ledger records: walk finding 63).
func TestExisting(t *testing.T) {
	dir := t.TempDir()
	a := testPool("a", 2, time.Second, v4("10.1.0.0/24"))
	b := testPool("b", 2, time.Second, v4("10.2.0.0/24"))
	r := openTest(t, dir, nil, a, b)
	if got, err := r.Existing(); err != nil || len(got) != 0 {
		t.Fatalf("before any allocation: %v, %v", got, err)
	}
	if _, err := r.Allocate(context.Background(), "b", "x", ""); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ipam", "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Opened with other pools: b's file is still listed.
	r2 := openTest(t, dir, nil, a)
	for _, reg := range []*Registry{r, r2} {
		if got, err := reg.Existing(); err != nil || !slices.Equal(got, []string{"b"}) {
			t.Errorf("Existing: %v, %v; want [b]", got, err)
		}
	}
}
