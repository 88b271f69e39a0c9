package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
)

// show renders the vlan, macvlan, vrf and bond kinds in the schema, with
// their defaults, and what it renders parses back to the same links.
func TestRenderLinkKindsRoundTrip(t *testing.T) {
	src := "version: 1\nlinks:\n  eth0: {kind: device}\n" +
		"  v7: {kind: vlan, vlan: {parent: eth0, id: 7}}\n" +
		"  qinq: {kind: vlan, vlan: {parent: v7, id: 8, protocol: 802.1ad}}\n" +
		"  mv0: {kind: macvlan, master: blue, macvlan: {parent: eth0}}\n" +
		"  blue: {kind: vrf, vrf: {table: 1001}}\n" +
		"  bond0: {kind: bond, mtu: 9000, bond: {mode: active-backup}}\n" +
		"  m1: {kind: veth, master: bond0, veth: {peer: m2}}\n  m2: {kind: veth, veth: {peer: m1}}\n"
	cfg, err := desired.Parse([]desired.Source{{Name: "f.yaml", Data: []byte(src)}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := State(cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    vlan: {parent: eth0, id: 7, protocol: 802.1q}\n",
		"    vlan: {parent: v7, id: 8, protocol: 802.1ad}\n",
		"    master: blue\n        macvlan: {parent: eth0, mode: bridge}\n",
		"    vrf: {table: 1001}\n",
		"    bond: {mode: active-backup, miimon: 100}\n",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("render has no %q:\n%s", want, out)
		}
	}
	back, err := desired.Parse([]desired.Source{{Name: "show.yaml", Data: out}})
	if err != nil {
		t.Fatalf("parse the render: %v\n%s", err, out)
	}
	for _, n := range []string{"v7", "qinq", "mv0", "blue", "bond0"} {
		a, b := *cfg.State.Links[n], *back.State.Links[n]
		a.Origin, b.Origin, a.StateSet, b.StateSet = "", "", false, false
		if d := cmp.Diff(a, b); d != "" {
			t.Errorf("link %s after a round trip (-file +render):\n%s", n, d)
		}
	}
}

// A macvlan in a mode the schema lacks (someone else's, in source mode) is
// rendered with the mode in a comment, and the render still parses.
func TestRenderMACVlanSourceMode(t *testing.T) {
	st := &model.State{Protocol: 245, Links: map[string]*model.Link{
		"eth0": {Name: "eth0", Kind: model.KindDevice},
		"ms0":  {Name: "ms0", Kind: model.KindMACVlan, MACVlan: &model.MACVlan{Parent: "eth0", Mode: "source"}},
	}}
	out, err := State(st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "# mode source (not in the schema)") || strings.Contains(string(out), "mode: source") {
		t.Errorf("render:\n%s", out)
	}
	if _, err := desired.Parse([]desired.Source{{Name: "show.yaml", Data: out}}); err != nil {
		t.Fatalf("parse the render: %v\n%s", err, out)
	}
}

// Walk finding 150 (issue 30, guest probe): the kernel gives a bond's
// members the bond's MTU and show printed it on each member, which the
// loader refuses ("a member of bond takes the bond's MTU"): show's output
// of any bond with members was not a file.
func TestWalkFinding150BondMemberShownWithoutMTU(t *testing.T) {
	st := model.NewState()
	st.Links["b0"] = &model.Link{Name: "b0", Kind: model.KindBond, MTU: 9000, Up: true, Bond: &model.Bond{Mode: "balance-rr", Miimon: 100}}
	st.Links["d0"] = &model.Link{Name: "d0", Kind: model.KindDummy, MTU: 9000, Up: true, Master: "b0"}
	for what, render := range map[string]func(*model.State) ([]byte, error){"show": State, "show --all": Foreign} {
		out, err := render(st)
		if err != nil {
			t.Fatal(err)
		}
		text := string(out)
		if what == "show --all" {
			// Uncommented, as the user would take the links over.
			lines := strings.Split(text, "\n")
			for i, l := range lines {
				body := strings.TrimLeft(l, " ")
				body = strings.TrimPrefix(body, "# ")
				if j := strings.Index(body, " #"); j >= 0 {
					body = body[:j]
				}
				lines[i] = l[:len(l)-len(strings.TrimLeft(l, " "))] + body
			}
			text = "version: 1\n" + strings.Join(lines, "\n")
		}
		if _, err := desired.Parse([]desired.Source{{Name: "show.yaml", Data: []byte(text)}}); err != nil {
			t.Errorf("%s of a bond with a member does not parse: %v\n%s", what, err, text)
		}
	}
}
