package integration

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestNftIssue31ApplyJudgesChainGraph: an apply that changes one rule of a
// table whose rules jump is judged by nft with the whole chain graph, as
// nft -f of the table would be, though the kernel holds the other rules
// compiled already: a statement its chain's new reach forbids is refused
// with nft's own message at the rule's file:line:col, and nothing is
// written (apply compiled only the changed rule, and the kernel refused
// the batch).
func TestNftIssue31ApplyJudgesChainGraph(t *testing.T) {
	nettest.RequireTool(t, "nft")
	const base = `version: 1
nftables:
  ip t:
    maps:
      vm: {type: "inet_service : verdict", elements: [ELEMS]}
    chains:
      pre:
        type: nat
        hook: prerouting
        priority: -100
        rules:
          - "tcp dport vmap @vm"
          - "PRE"
      helper:
        rules:
          - "HELPER"
      h2:
        rules:
          - "H2"
`
	file := func(elems, pre, helper, h2 string) string {
		return strings.NewReplacer("ELEMS", elems, "PRE", pre, "HELPER", helper, "H2", h2).Replace(base)
	}
	first := file(`"22 : accept"`, "counter", "counter", "masquerade")
	for _, tc := range []struct {
		name, second string
		at           string // where the error is: line:col and path
	}{
		// The changed rule is the one the graph forbids.
		{"statement-in-a-reached-chain", file(`"22 : accept"`, "jump helper", "masquerade", "masquerade"),
			":16:14: nftables.ip t.chains.helper.rules[0]: "},
		// The changed rule is a jump; the rule it makes reachable, unchanged
		// and held by the kernel, is the one refused (as nft -f of the
		// table refuses it: it comes after).
		{"jump-to-a-chain-with-a-restricted-statement", file(`"22 : accept"`, "jump h2", "counter", "masquerade"),
			":19:14: nftables.ip t.chains.h2.rules[0]: "},
		// A verdict map's new element is the jump.
		{"verdict-map-element", file(`"22 : accept", "25 : jump h2"`, "counter", "counter", "masquerade"),
			":19:14: nftables.ip t.chains.h2.rules[0]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := nettest.NewNetNS(t)
			dir, state := t.TempDir(), t.TempDir()
			f1 := nettest.WriteFile(t, dir, "first.yaml", first)
			if r := nettest.CLI(t, "apply", "-q", "-c", f1, "--netns", ns, "--state-dir", state); r.Code != 0 {
				t.Fatalf("first apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
			before := nettest.InNS(t, ns, "nft", "list", "table", "ip", "t")
			f2 := nettest.WriteFile(t, dir, "second.yaml", tc.second)
			r := nettest.CLI(t, "apply", "-c", f2, "--netns", ns, "--state-dir", state)
			if r.Code == 0 {
				t.Fatalf("second apply took a table whose graph the kernel refuses:\n%s%s", r.Stdout, r.Stderr)
			}
			want := f2 + tc.at + "Could not process rule: Operation not supported"
			if !strings.Contains(r.Stderr, want) || !strings.Contains(r.Stderr, "invalid configuration") {
				t.Errorf("second apply said:\n%s\nwant nft's refusal before any write: %s", r.Stderr, want)
			}
			if after := nettest.InNS(t, ns, "nft", "list", "table", "ip", "t"); after != before {
				t.Errorf("the table changed:\n%s\nwas:\n%s", after, before)
			}
			// validate, compiling the whole file, says the same.
			if v := nettest.CLI(t, "validate", "-c", f2); v.Code == 0 || !strings.Contains(v.Stderr, want) {
				t.Errorf("validate: exit %d\n%s\nwant %s", v.Code, v.Stderr, want)
			}
		})
	}
}
