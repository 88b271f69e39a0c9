package walk

import (
	"slices"
	"testing"
)

// A rule of the corpus whose anonymous verdict map jumps to the regular
// chain helper (`tcp dport vmap { …, 24 : jump helper }`) went into a table
// without that chain: repair dropped only rules whose verdict is their
// first or next-to-last word. The file was invalid (the kernel refuses the
// jump: ENOENT, which validate reports at the rule), and the walk took the
// refusal for a failure (walk finding 183: host soak seed
// 79831351474037, step 8, shrunk to one file).
func TestWalkFinding183RuleJumpsOnlyToDeclaredChains(t *testing.T) {
	vmap := "tcp dport vmap { 22 : accept, 23 : drop, 24 : jump helper }"
	for _, c := range []struct {
		name   string
		chains []*Chain
		kept   map[string][]string
	}{
		{"no helper", []*Chain{{Name: "in", Hook: "input", Rules: []string{vmap, "jump helper", "counter goto helper", "accept"}}},
			map[string][]string{"in": {"accept"}}},
		{"helper declared", []*Chain{{Name: "in", Hook: "input", Rules: []string{vmap, "jump helper", "accept"}}, {Name: "helper", Rules: []string{vmap, "goto helper", "drop"}}},
			map[string][]string{"in": {vmap, "jump helper", "accept"}, "helper": {"drop"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tb := &Table{Family: "bridge", Name: "nrw3", Chains: c.chains}
			(&Gen{}).repairTable(&Config{Links: map[string]*Link{}}, tb)
			for _, ch := range tb.Chains {
				if !slices.Equal(ch.Rules, c.kept[ch.Name]) {
					t.Errorf("chain %s keeps %q, want %q", ch.Name, ch.Rules, c.kept[ch.Name])
				}
			}
		})
	}
}
