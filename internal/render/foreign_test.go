package render

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
)

// show --all: what is ours is State's rendering line for line, what is not
// is comments under its section that say why, the whole loads, and the
// comments uncommented are Foreign's document. Free text in them that looks
// like a key is hidden; a public key is not.
func TestAllPrintsForeignAsComments(t *testing.T) {
	a, p := netip.MustParseAddr, netip.MustParsePrefix
	const secret = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
	pub, err := model.ParseKey("HIgo9xNzJMWLKASShiTqIybxZ0U3wGLiUeJ1PKf8ykw=")
	if err != nil {
		t.Fatal(err)
	}
	st := model.NewState()
	st.Links["br0"] = &model.Link{Name: "br0", Kind: model.KindBridge, Up: true, MTU: 1500, Owned: true}
	st.Links["eth0"] = &model.Link{Name: "eth0", Kind: model.KindDevice, Up: true, MTU: 1500}
	st.Links["fb0"] = &model.Link{Name: "fb0", Kind: model.KindBridge, MTU: 1500, Alias: secret}
	st.Links["wg9"] = &model.Link{Name: "wg9", Kind: model.KindWireGuard, MTU: 1420,
		WireGuard: &model.WireGuard{PublicKey: pub, Peers: []model.WireGuardPeer{{PublicKey: pub, AllowedIPs: []netip.Prefix{p("10.7.0.2/32")}}}}}
	st.Addresses = []model.Address{
		{Link: "br0", Prefix: p("10.9.0.1/24"), Owned: true},
		{Link: "br0", Prefix: p("fe80::1/64"), Scope: model.ScopeLink, Owned: true, Protocol: 3},
		{Link: "eth0", Prefix: p("192.0.2.5/24")},
		{Link: "eth0", Prefix: p("192.0.2.6/32"), Protocol: 245},
	}
	st.Routes = []model.Route{
		{Table: 254, Dst: p("10.8.0.0/24"), Type: model.RouteUnicast, Gateway: a("10.9.0.254"), Dev: "br0", Protocol: 245},
		{Table: 254, Dst: p("10.10.0.0/16"), Type: model.RouteUnicast, Gateway: a("192.0.2.1"), Dev: "eth0", Protocol: 3},
		{Table: 255, Dst: p("192.0.2.255/32"), Type: 3, // RTN_BROADCAST, which a file cannot declare
			Src: a("192.0.2.5"), Dev: "eth0", Scope: model.ScopeLink, Protocol: 2},
	}
	st.Rules = []model.Rule{
		{Priority: 0, Action: model.RuleLookup, Table: 255, SuppressPrefixLen: -1, Protocol: 2},
		{Priority: 100, Action: model.RuleLookup, Table: 100, SuppressPrefixLen: -1, Protocol: 245},
	}
	// Someone else's tables: one empty (yaml.v3 writes a key's comment
	// before an empty mapping's "{}", which then does not parse), one
	// that could not be read.
	st.NFTables = []model.NftTable{
		{Family: "inet", Name: "mine", Owned: true, Chains: []model.NftChain{{Name: "c"}}},
		{Family: "arp", Name: "odd", Unread: "read nftables table arp odd: an expression this reader does not know"},
		{Family: "ip", Name: "fw", Sets: []model.NftSet{{Name: "s", Type: model.NftIPv4}}},
		{Family: "netdev", Name: "nd"},
	}
	owned, foreign := st.Owned(), st.Foreign()
	out, err := All(owned, foreign)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	want, _ := State(owned)
	// The declared lines, and the commented ones uncommented, each
	// under its section's key.
	var declared []string
	uncommented := map[string][]string{}
	section := ""
	for _, l := range strings.SplitAfter(text, "\n") {
		if k, ok := strings.CutPrefix(l, "# "); ok {
			section = strings.TrimSuffix(k, ":\n")
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(l, " "), "#") {
			uncommented[section] = append(uncommented[section], strings.Replace(l, "# ", "", 1))
			continue
		}
		if l != "" && l[0] != ' ' {
			section, _, _ = strings.Cut(l, ":")
		}
		declared = append(declared, l)
	}
	if d := cmp.Diff(string(want), strings.Join(declared, "")); d != "" {
		t.Errorf("show --all's declarations are not show's (-show +all):\n%s\n%s", d, text)
	}
	if _, err := desired.Parse([]desired.Source{{Name: "all.yaml", Data: out}}); err != nil {
		t.Fatalf("show --all does not load: %v\n%s", err, text)
	}
	for _, w := range []string{
		"    # fb0: # not netreconcile's: add `adopt: true` to take it over\n",
		"    # eth0: # not netreconcile's: a device, never owned",
		"    #         - 192.0.2.5/24\n",
		"    # br0: # netreconcile's link: its addresses here are not\n",
		"# proto 3, the kernel's (IPv6 link-local)\n",
		"    # - {to: 10.10.0.0/16, via: 192.0.2.1, dev: eth0, table: main, scope: global} # proto 3 (boot): not netreconcile's (245)\n",
		"type: broadcast", "# proto 2 (kernel): the kernel's\n",
		"    # - {priority: 0, family: ipv4, table: local} # proto 2 (kernel): the kernel's\n",
		pub.String(),
		"    # netdev nd: {} # not netreconcile's: add `adopt: true` to take it over\n",
		"    # ip fw: # not netreconcile's: add `adopt: true` to take it over\n",
		"    # arp odd: {} # not netreconcile's, and could not be read: read nftables table arp odd: an expression this reader does not know\n",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("show --all lacks %q:\n%s", w, text)
		}
	}
	if strings.Contains(text, secret) {
		t.Errorf("show --all prints a key-like alias:\n%s", text)
	}
	// Uncommented, the foreign objects are Foreign's, under the same keys.
	var got, wantForeign map[string]any
	var doc strings.Builder
	for k, ls := range uncommented {
		doc.WriteString(k + ":\n" + strings.Join(ls, ""))
	}
	if err := yaml.Unmarshal([]byte(doc.String()), &got); err != nil {
		t.Fatalf("uncommented: %v\n%s", err, doc.String())
	}
	fy, err := Foreign(foreign)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(fy, &wantForeign); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"links", "routes", "rules", "nftables"} {
		if d := cmp.Diff(wantForeign[k], got[k]); d != "" {
			t.Errorf("uncommented %s are not Foreign's (-foreign +uncommented):\n%s", k, d)
		}
	}
}
