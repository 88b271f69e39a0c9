package diff

import (
	"strings"
	"testing"
)

// A plan's text is inert: names and values from the kernel (an nftables
// table's name, a link's alias) cannot act on the terminal or forge a line.
func TestPlanTextIsInert(t *testing.T) {
	p := &Plan{Ops: []Op{
		{Action: Delete, Kind: KindNftTable, ID: "inet x\x1b]0;t\a\n+ link evil", Summary: "\u202e", Reason: "r\r"},
		{Action: Update, Kind: KindLink, ID: "br0", Changes: []Change{{Field: "alias", From: "a\x1b[2J\n- link br0\xff", To: "netreconcile"}}},
	}}
	got := p.String()
	want := "- nft table inet x\\x1b]0;t\\a\\n+ link evil (\\u202e): r\\r\n~ link br0\n    alias: a\\x1b[2J\\n- link br0\\xff -> netreconcile\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	if strings.Count(got, "\n") != 3 {
		t.Errorf("lines forged:\n%s", got)
	}
}
