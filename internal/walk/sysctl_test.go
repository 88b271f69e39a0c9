package walk

import (
	"math/rand"
	"strings"
	"testing"
)

// TestGenSysctls: the generator declares global and per-link sysctls, adds,
// changes and drops them, and writes them where the schema wants them.
func TestGenSysctls(t *testing.T) {
	g, err := NewGen(rand.New(rand.NewSource(1)), Caps{}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := g.Initial()
	var global, perLink, dropped int
	for i := 0; i < 300; i++ {
		var what string
		c, what = g.Next(c)
		if strings.Contains(what, "drop sysctl") {
			dropped++
		}
		y := c.YAML()
		if len(c.Sysctls) > 0 {
			global++
			if !strings.Contains(y, "\nsysctls: {") {
				t.Fatalf("global sysctls not at the top of the file:\n%s", y)
			}
		}
		for _, l := range c.Links {
			if len(l.Sysctls) > 0 {
				perLink++
				if !strings.Contains(y, "sysctls: {ipv4.") {
					t.Fatalf("link sysctls not in the link:\n%s", y)
				}
				break
			}
		}
	}
	if global == 0 || perLink == 0 || dropped == 0 {
		t.Errorf("in 300 steps: %d with global sysctls, %d with per-link ones, %d drops", global, perLink, dropped)
	}
}
