package nftwire_test

import (
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nftwire"
	"github.com/netreconcile/netreconcile/test/nettest"
)

func dialNS(t *testing.T, ns string) *nftwire.Conn {
	t.Helper()
	f, err := os.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := nftwire.Dial(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

const decls = `table inet t {
	set s { type ipv4_addr; flags interval; }
	map m { type ipv4_addr : verdict; }
	counter c1 { }
	chain c { type filter hook input priority 0; }
	chain helper { }
}
`

var rules = []string{
	"tcp dport { 22, 80, 443 } accept",
	"ip saddr { 10.0.0.0/8, 192.168.0.0/16 } counter drop",
	"ip saddr . tcp dport { 10.0.0.0/8 . 10-23, 192.168.1.1-192.168.3.8 . 80-443 } accept",
	"tcp dport vmap { 22 : accept, 23 : drop, 24 : jump helper }",
	"meta mark set ip saddr map { 1.1.1.1 : 0x1, * : 0x2 }",
	"ip saddr @s counter name \"c1\" accept comment \"hello\"",
	"quota over 10 mbytes drop",
	"limit rate 10/second accept",
	"ct state { established, related } accept",
	"iif lo accept",
	"ip daddr vmap @m",
	"counter packets 2 bytes 1",
}

var handleRE = regexp.MustCompile(` # handle \d+| \d+( \d+)?$`)

func TestRoundTripThroughBatch(t *testing.T) {
	nettest.RequireTool(t, "nft")
	a, b := nettest.NewNetNS(t), nettest.NewNetNS(t)
	script := decls
	for _, r := range rules {
		script += "add rule inet t c " + r + "\n"
	}
	dir := t.TempDir()
	p := nettest.WriteFile(t, dir, "a.nft", script)
	nettest.InNS(t, a, "nft", "-f", p)
	nettest.InNS(t, b, "nft", "-f", nettest.WriteFile(t, dir, "b.nft", decls))

	ca, cb := dialNS(t, a), dialNS(t, b)
	fam, _ := nftwire.Family("inet")
	d, err := ca.ReadTable(fam, "t", nil)
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	var batch nftwire.Batch
	var fps []string
	for i := range d.Rules {
		r := &d.Rules[i]
		c, _, err := nftwire.Compile(r, func(n string) (*nftwire.Set, [][]byte) { return d.Set(n), d.Elems[n] })
		if err != nil {
			t.Fatal(err)
		}
		fps = append(fps, c.Fingerprint)
		ud, err := nftwire.AppendMarker(c.UData, nftwire.Marker{Key: strings.Repeat("ab", 16), Fingerprint: c.Fingerprint, Text: rules[i]})
		if err != nil {
			t.Fatal(err)
		}
		if err := batch.AddRule(fam, "t", "c", c, ud, nftwire.Append, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := cb.Send(&batch); err != nil {
		t.Fatal(err)
	}
	db, err := cb.ReadTable(fam, "t", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range db.Rules {
		r := &db.Rules[i]
		c, m, err := nftwire.Compile(r, func(n string) (*nftwire.Set, [][]byte) { return db.Set(n), db.Elems[n] })
		if err != nil {
			t.Fatal(err)
		}
		if c.Fingerprint != fps[i] || m.Fingerprint != fps[i] || m.Text != rules[i] {
			t.Errorf("rule %d %q: fingerprint %s, marker %+v, want %s", i, rules[i], c.Fingerprint, m, fps[i])
		}
	}
	la := nettest.InNS(t, a, "nft", "--debug=netlink", "list", "table", "inet", "t")
	lb := nettest.InNS(t, b, "nft", "--debug=netlink", "list", "table", "inet", "t")
	strip := func(s string) string {
		var out, elems []string
		flush := func() {
			sort.Strings(elems)
			out = append(out, elems...)
			elems = nil
		}
		for _, l := range strings.Split(s, "\n") {
			if strings.HasPrefix(l, "  userdata") || l == "" {
				continue
			}
			if strings.HasPrefix(l, "\telement ") {
				elems = append(elems, l)
				continue
			}
			flush()
			out = append(out, handleRE.ReplaceAllString(l, ""))
		}
		flush()
		return strings.Join(out, "\n")
	}
	if strip(la) != strip(lb) {
		t.Errorf("nft lists differently:\n--- nft -f\n%s\n--- batch\n%s", la, lb)
	}
	t.Log(lb)
}
