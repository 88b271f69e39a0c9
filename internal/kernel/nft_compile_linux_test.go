package kernel

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/nftables/expr"

	"github.com/netreconcile/netreconcile/internal/nftrule"
)

// render writes expressions like `nft --debug=netlink` does, shortened.
func render(es []expr.Any) string {
	var out []string
	for _, e := range es {
		switch e := e.(type) {
		case *expr.Meta:
			if e.SourceRegister {
				out = append(out, fmt.Sprintf("meta set %d", e.Key))
			} else {
				out = append(out, fmt.Sprintf("meta load %d", e.Key))
			}
		case *expr.Cmp:
			out = append(out, fmt.Sprintf("cmp %d %x", e.Op, e.Data))
		case *expr.Bitwise:
			out = append(out, fmt.Sprintf("bitwise &%x ^%x", e.Mask, e.Xor))
		case *expr.Payload:
			out = append(out, fmt.Sprintf("payload %d+%d/%d", e.Base, e.Offset, e.Len))
		case *expr.Lookup:
			out = append(out, fmt.Sprintf("lookup %s inv=%v", e.SetName, e.Invert))
		case *expr.Immediate:
			out = append(out, fmt.Sprintf("imm r%d %x", e.Register, e.Data))
		case *expr.Verdict:
			out = append(out, fmt.Sprintf("verdict %d %s", e.Kind, e.Chain))
		case *expr.Exthdr:
			out = append(out, fmt.Sprintf("exthdr write t%d %d/%d r%d", e.Type, e.Offset, e.Len, e.SourceRegister))
		case *expr.Rt:
			out = append(out, "rt tcpmss")
		case *expr.Byteorder:
			out = append(out, "hton")
		case *expr.Range:
			out = append(out, fmt.Sprintf("range %d %x-%x", e.Op, e.FromData, e.ToData))
		case *expr.NAT:
			out = append(out, fmt.Sprintf("nat %d fam %d addr r%d proto r%d", e.Type, e.Family, e.RegAddrMin, e.RegProtoMin))
		default:
			out = append(out, fmt.Sprintf("%T", e))
		}
	}
	return strings.Join(out, "; ")
}

// The expected lists follow `nft --debug=netlink` (nft 1.0.6) for each line:
// meta keys mark=3 nfproto=15 l4proto=16 oifname=7; cmp eq=0 neq=1
// gte=5 lte=3; payload bases network=1 transport=2.
func TestCompileRule(t *testing.T) {
	for _, tc := range []struct{ family, rule, want string }{
		{"inet", "meta mark & 0x00000060 == 0x00000020 accept",
			"meta load 3; bitwise &60000000 ^00000000; cmp 0 20000000; verdict 1 "},
		{"inet", "ip daddr @t4 meta mark set meta mark & 0xffffffdf | 0x00000040 accept",
			"meta load 15; cmp 0 02; payload 1+16/4; lookup t4 inv=false; meta load 3; bitwise &9fffffff ^40000000; meta set 3; verdict 1 "},
		{"ip", "ip daddr @t4 accept", "payload 1+16/4; lookup t4 inv=false; verdict 1 "},
		{"inet", "ip6 daddr != @t6", "meta load 15; cmp 0 0a; payload 1+24/16; lookup t6 inv=true"},
		{"inet", `oifname "lo" accept`, "meta load 7; cmp 0 6c6f0000000000000000000000000000; verdict 1 "},
		{"ip", "ip saddr 10.16.0.0/12", "payload 1+12/4; bitwise &fff00000 ^00000000; cmp 0 0a100000"},
		{"ip", "ip saddr != 10.1.0.0/16", "payload 1+12/2; cmp 1 0a01"},
		{"inet", "udp sport 1000-2000", "meta load 16; cmp 0 11; payload 2+0/2; cmp 5 03e8; cmp 3 07d0"},
		{"inet", "meta l4proto tcp tcp dport 22", "meta load 16; cmp 0 06; payload 2+2/2; cmp 0 0016"},
		{"inet", "tcp flags syn tcp option maxseg size set 1380",
			"meta load 16; cmp 0 06; payload 2+13/1; bitwise &02 ^00; cmp 1 00; imm r1 0564; exthdr write t2 2/2 r1"},
		{"inet", "tcp flags syn tcp option maxseg size set rt mtu",
			"meta load 16; cmp 0 06; payload 2+13/1; bitwise &02 ^00; cmp 1 00; rt tcpmss; hton; exthdr write t2 2/2 r1"},
		{"inet", "ip daddr 1.2.3.5 tcp dport 80 dnat ip to 5.6.7.9:80",
			"meta load 15; cmp 0 02; payload 1+16/4; cmp 0 01020305; meta load 16; cmp 0 06; payload 2+2/2; cmp 0 0050; imm r1 05060709; imm r2 0050; nat 1 fam 2 addr r1 proto r2"},
	} {
		r, err := nftrule.Parse(tc.rule)
		if err != nil {
			t.Fatal(err)
		}
		es, err := compileRule(tc.family, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(es); got != tc.want {
			t.Errorf("%s %q:\n got  %s\n want %s", tc.family, tc.rule, got, tc.want)
		}
	}
}
