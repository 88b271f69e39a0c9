package nftwire_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nftwire"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestDumpAsTheLibrary holds Dump, which reads a dump's datagrams itself,
// to mdlayher/netlink's Execute on the same requests in the same
// namespace: the same payloads in the same order, and the same errno for a
// request the kernel refuses. The table is large enough that every dump of
// its rules and elements spans many datagrams.
func TestDumpAsTheLibrary(t *testing.T) {
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	var b strings.Builder
	b.WriteString("table inet t {\n\tset s { type ipv4_addr; flags interval; }\n\tcounter c1 { }\n\tchain c { type filter hook input priority 0; }\n\tchain helper { }\n}\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "add rule inet t c ip saddr 10.%d.%d.0/24 tcp dport { 22, %d } counter accept comment \"rule %d\"\n", i/256, i%256, 1000+i, i)
	}
	b.WriteString("add element inet t s {")
	for i := range 4096 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " 172.%d.%d.0/24", 16+i/256, i%256)
	}
	b.WriteString(" }\ntable ip other {\n\tchain o {\n\t}\n}\n")
	nettest.InNS(t, ns, "nft", "-f", nettest.WriteFile(t, t.TempDir(), "t.nft", b.String()))

	c := dialNS(t, ns)
	fam, _ := nftwire.Family("inet")
	for _, r := range []struct {
		what  string
		typ   uint16
		attrs []byte
		many  bool
	}{
		{"tables", nftwire.MsgGetTable, nil, false},
		{"chains", nftwire.MsgGetChain, nil, false},
		{"rules", nftwire.MsgGetRule, nftwire.DumpFilter(nftwire.MsgGetRule, "t", ""), true},
		{"sets", nftwire.MsgGetSet, nftwire.DumpFilter(nftwire.MsgGetSet, "t", ""), false},
		{"elements", nftwire.MsgGetSetElem, nftwire.DumpFilter(nftwire.MsgGetSetElem, "t", "s"), true},
		{"elements of a set that does not exist", nftwire.MsgGetSetElem, nftwire.DumpFilter(nftwire.MsgGetSetElem, "t", "nope"), false},
		{"objects", nftwire.MsgGetObj, nftwire.DumpFilter(nftwire.MsgGetObj, "t", ""), false},
	} {
		ours, oerr := c.Dump(r.typ, fam, r.attrs)
		lib, lerr := c.LibraryDump(r.typ, fam, r.attrs)
		var oe, le syscall.Errno
		if errors.As(oerr, &oe) != errors.As(lerr, &le) || oe != le || (oerr == nil) != (lerr == nil) {
			t.Errorf("%s: Dump's error %v, the library's %v", r.what, oerr, lerr)
			continue
		}
		if oerr != nil {
			continue
		}
		if len(ours) != len(lib) {
			t.Errorf("%s: Dump read %d answers, the library %d", r.what, len(ours), len(lib))
			continue
		}
		size := 0
		for i, m := range lib {
			size += len(m)
			if !bytes.Equal(ours[i], m) {
				t.Errorf("%s: answer %d differs:\n ours % x\n  lib % x", r.what, i, ours[i], m)
				break
			}
		}
		// A dump the socket's first datagram could hold would not test
		// the reading of the next ones.
		if r.many && size < 4*32768 {
			t.Errorf("%s: %d bytes in all, want several datagrams' worth", r.what, size)
		}
	}
}
