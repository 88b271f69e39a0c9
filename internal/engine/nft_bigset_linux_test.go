package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// A set created with more than 1,024 elements is an op per 1,024 of them
// (memory, issue 16): on a real kernel, a cold load of an interval set and
// of a plain one puts every element in (nft -j counts them), the second
// plan is empty and writes nothing, and one more element is one op.
func TestBigSetColdLoadConverges(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	file := func(extra string) string {
		var b strings.Builder
		b.WriteString("version: 1\nnftables:\n  inet big:\n    sets:\n      ranges:\n        type: ipv4_addr\n        flags: [interval]\n        elements: [")
		for i := range 3000 {
			v := uint32(10)<<24 | uint32(i)*16
			fmt.Fprintf(&b, "%s%d.%d.%d.%d/30", map[bool]string{true: ", "}[i > 0], v>>24, v>>16&0xff, v>>8&0xff, v&0xff)
		}
		b.WriteString("]\n      hosts:\n        type: ipv4_addr\n        elements: [")
		for i := range 2049 {
			fmt.Fprintf(&b, "%s172.16.%d.%d", map[bool]string{true: ", "}[i > 0], i/256, i%256)
		}
		b.WriteString(extra + "]\n")
		return b.String()
	}
	parse := func(y string) *desired.Config {
		cfg, err := desired.Parse([]desired.Source{{Name: "big.yaml", Data: []byte(y)}})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	ns := nettest.NewNetNS(t)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	l, _ := ledger.OpenIn(nil, 0)
	eng := &engine.Engine{Kernel: k, Ledger: l}
	apply := func(cfg *desired.Config) *diff.Plan {
		t.Helper()
		plan, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := eng.Apply(context.Background(), plan); err != nil || res.Err() != nil {
			t.Fatal(err, res.Err())
		}
		return plan
	}
	plan := apply(parse(file("")))
	// The table, two sets, 3 ops for 3,000 ranges and 3 for 2,049 hosts.
	if n := len(plan.Ops); n != 1+2+3+3 {
		t.Errorf("cold load: %d ops, want 9:\n%s", n, plan)
	}
	count := func(set string) int {
		var out struct {
			Nftables []map[string]json.RawMessage `json:"nftables"`
		}
		if err := json.Unmarshal([]byte(nettest.InNS(t, ns, "nft", "-j", "list", "set", "inet", "big", set)), &out); err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Nftables {
			if raw, ok := o["set"]; ok {
				var s struct {
					Elem []json.RawMessage `json:"elem"`
				}
				if err := json.Unmarshal(raw, &s); err != nil {
					t.Fatal(err)
				}
				return len(s.Elem)
			}
		}
		return -1
	}
	if r, h := count("ranges"), count("hosts"); r != 3000 || h != 2049 {
		t.Errorf("nft -j: %d ranges and %d hosts, want 3000 and 2049", r, h)
	}
	w := k.Writes()
	if plan, err := eng.Plan(parse(file("")).State); err != nil || !plan.Empty() {
		t.Fatalf("second plan: %v\n%s", err, plan)
	}
	if k.Writes() != w {
		t.Errorf("the second plan wrote %d messages", k.Writes()-w)
	}
	plan = apply(parse(file(", 192.168.9.9")))
	if len(plan.Ops) != 1 || plan.Ops[0].ID != "inet big set hosts element 192.168.9.9" {
		t.Errorf("one more element: plan\n%s", plan)
	}
	if h := count("hosts"); h != 2050 {
		t.Errorf("nft -j: %d hosts, want 2050", h)
	}
}
