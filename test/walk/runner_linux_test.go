package walk

import (
	"math/rand"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// kernelRunner is the walk's runner on this kernel, over the foreign
// objects the commands of foreign make, for a test that steps it by hand
// with configurations of its own; it is closed with t.
func kernelRunner(t *testing.T, foreign []string) *runner {
	t.Helper()
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	g, err := NewGen(rand.New(rand.NewSource(1)), Caps{}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r, err := newRunner(g, foreign, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.close)
	return r
}
