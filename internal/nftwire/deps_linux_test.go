package nftwire_test

import (
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nftwire"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// DependencyFree is held to nft's listing: each pair of rules nft lists
// alike though their bytecode differs has equal forms (else the pair is
// never judged, and show's output would rewrite the rule), and a pair
// that differs elsewhere (another port, another address) has different
// ones (else every such change lists the whole ruleset).
func TestDependencyFreeAgreesWithNftsListing(t *testing.T) {
	nettest.RequireTool(t, "nft")
	type pair struct{ family, a, b string }
	alike := []pair{
		{"ip", "ip protocol tcp tcp dport 22 accept", "tcp dport 22 accept"},
		{"ip", "ip protocol tcp tcp dport { 22, 80 } accept", "tcp dport { 22, 80 } accept"},
		{"inet", "meta l4proto icmp icmp type echo-request accept", "icmp type echo-request accept"},
		{"inet", "meta nfproto ipv4 ip saddr 10.0.0.1 accept", "ip saddr 10.0.0.1 accept"},
		{"ip6", "ip6 nexthdr tcp tcp dport 22 drop", "tcp dport 22 drop"},
		{"bridge", "ether type ip6 ip6 nexthdr ipv6-icmp icmpv6 type nd-router-advert drop", "ip6 nexthdr ipv6-icmp icmpv6 type nd-router-advert drop"},
		{"bridge", "ether type ip ip saddr 10.0.0.1 accept", "ip saddr 10.0.0.1 accept"},
		{"netdev", "ether type ip ip frag-off & 0x1fff != 0 drop", "ip frag-off & 8191 != 0 drop"},
	}
	differ := []pair{
		{"ip", "tcp dport 22 accept", "tcp dport 23 accept"},
		{"ip", "ip protocol tcp tcp dport 22 accept", "tcp dport 23 accept"},
		{"inet", "ip saddr 10.0.0.1 accept", "ip saddr 10.0.0.2 accept"},
		{"inet", "tcp dport { 22, 80 } accept", "tcp dport 22 drop"},
		{"bridge", "ether type ip ip saddr 10.0.0.1 accept", "ip saddr 10.0.0.1 drop"},
	}
	ns := nettest.NewNetNS(t)
	c := dialNS(t, ns)
	handleRE := regexp.MustCompile(`\s+# handle \d+$`)
	form := func(family, table string, i int) ([]byte, string) {
		fam, _ := nftwire.Family(family)
		d, err := c.ReadTable(fam, table, nil)
		if err != nil || d == nil {
			t.Fatalf("read %s %s: %v", family, table, err)
		}
		r := d.Rules[i]
		refs, err := nftwire.ReferencedSets(r.Exprs)
		if err != nil {
			t.Fatal(err)
		}
		var anon []string
		for _, n := range refs {
			if s := d.Set(n); s != nil && s.Anonymous() {
				anon = append(anon, n)
			}
		}
		f, err := nftwire.DependencyFree(r.Exprs, anon)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("ip", "netns", "exec", ns, "nft", "-a", "-s", "list", "table", family, table).CombinedOutput()
		if err != nil {
			t.Fatalf("nft list: %v\n%s", err, out)
		}
		var listed []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "# handle") && !strings.Contains(l, "chain ") && !strings.Contains(l, "table ") {
				listed = append(listed, strings.TrimSpace(handleRE.ReplaceAllString(l, "")))
			}
		}
		return f, listed[i]
	}
	for n, tc := range []struct {
		pairs []pair
		alike bool
	}{{alike, true}, {differ, false}} {
		for i, p := range tc.pairs {
			table := fmt.Sprintf("t%d_%d", n, i)
			script := fmt.Sprintf("add table %s %s\nadd chain %s %s c\nadd rule %s %s c %s\nadd rule %s %s c %s\n", p.family, table, p.family, table, p.family, table, p.a, p.family, table, p.b)
			if out, err := exec.Command("ip", "netns", "exec", ns, "sh", "-c", "nft -f - <<'EOF'\n"+script+"EOF\n").CombinedOutput(); err != nil {
				t.Fatalf("nft -f: %v\n%s%s", err, out, script)
			}
			fa, la := form(p.family, table, 0)
			fb, lb := form(p.family, table, 1)
			if tc.alike && la != lb {
				t.Fatalf("%s: nft lists %q and %q: not a pair nft lists alike", p.family, la, lb)
			}
			if got := string(fa) == string(fb); got != tc.alike {
				t.Errorf("%s %q and %q (listed %q, %q): forms equal %v, want %v", p.family, p.a, p.b, la, lb, got, tc.alike)
			}
		}
	}
}
