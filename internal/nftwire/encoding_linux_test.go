package nftwire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// tree renders netlink attributes as comparable lines: type without flags,
// payload in hex, nested payloads (flag set on either side's attribute,
// or a known nest) expanded, siblings sorted (the kernel reads attributes
// by type, in any order).
func tree(b []byte, nested func(path string) bool, path string) []string {
	as, err := netlink.UnmarshalAttributes(b)
	if err != nil {
		return []string{path + " !" + err.Error()}
	}
	var out []string
	for _, a := range as {
		p := fmt.Sprintf("%s/%d", path, kind(a))
		if a.Type&netlink.Nested != 0 || nested(p) {
			// A nest only if it reads as attributes that lay out
			// as the same bytes (the decoder skips attributes of
			// length 0, so four zero bytes would read as none).
			if as, err := netlink.UnmarshalAttributes(a.Data); err == nil && len(as) > 0 && bytes.Equal(mustMarshal(as), a.Data) {
				out = append(out, tree(a.Data, nested, p)...)
				continue
			}
		}
		out = append(out, fmt.Sprintf("%s=%x", p, a.Data))
	}
	sort.Strings(out)
	return out
}

func mustMarshal(as []netlink.Attribute) []byte {
	b, err := marshal(as)
	if err != nil {
		return nil
	}
	return b
}

// message renders a netlink message for the comparison: its type, its
// flags but the acknowledgement and echo requests (google/nftables asks
// one for every message, we one per batch), its netfilter header, its
// attributes. Transaction ids are the writer's own and left out, and so
// are the numbers the list items of an element list carry (the kernel
// reads any).
func message(m netlink.Message) string {
	flags := m.Header.Flags &^ (netlink.Acknowledge | netlink.Echo)
	typ := uint16(m.Header.Type) & 0xff
	if typ == MsgDelSetElem {
		// google/nftables asks to create on a delete, which the
		// kernel does not read.
		flags &^= netlink.Create
	}
	skip := map[string]bool{}
	switch typ {
	case MsgNewSet:
		skip["/10"] = true
	case MsgNewSetElem, MsgDelSetElem:
		skip["/4"] = true
	}
	var lines []string
	for _, l := range tree(m.Data[nfgenmsgLen:], func(p string) bool {
		// Nests the kernel reads as such, marked or not.
		return (typ == MsgNewSetElem || typ == MsgDelSetElem) && (p == "/3" || strings.Count(p, "/") == 2 || strings.HasSuffix(p, "/1"))
	}, "") {
		k, _, _ := strings.Cut(l, "=")
		if skip[k] {
			continue
		}
		if (typ == MsgNewSetElem || typ == MsgDelSetElem) && strings.HasPrefix(k, "/3/") {
			// /3/N/...: the item's number.
			parts := strings.SplitN(k, "/", 5)
			l = "/3/item/" + strings.Join(parts[4:], "/") + l[len(k):]
		}
		lines = append(lines, l)
	}
	sort.Strings(lines)
	return fmt.Sprintf("type %d flags %#x family %d\n  %s", typ, uint16(flags), m.Data[0], strings.Join(lines, "\n  "))
}

// googleMessages captures what google/nftables sends for f's calls.
func googleMessages(t *testing.T, f func(c *nftables.Conn)) []netlink.Message {
	t.Helper()
	var got []netlink.Message
	c, err := nftables.New(nftables.WithTestDial(func(req []netlink.Message) ([]netlink.Message, error) {
		got = append(got, req...)
		out := make([]netlink.Message, len(req))
		for i, m := range req {
			out[i] = netlink.Message{Header: netlink.Header{Type: netlink.Error, Sequence: m.Header.Sequence}, Data: make([]byte, 4)}
		}
		return out, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	f(c)
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	// Without the batch's begin and end.
	var out []netlink.Message
	for _, m := range got {
		if typ := uint16(m.Header.Type); typ != msgBatchBegin && typ != msgBatchEnd {
			out = append(out, m)
		}
	}
	return out
}

// The messages of our own encoder say to the kernel what google/nftables'
// say, for the objects both can express: tables, chains, sets of
// netreconcile's own types, their elements, deletes. (google/nftables
// marks the flags of an interval end as nested, which the kernel ignores:
// the comparison expands a nest by its position where either side says
// it is one.)
func TestEncodingMatchesGoogleNftables(t *testing.T) {
	fam := byte(unix.NFPROTO_INET)
	gt := &nftables.Table{Family: nftables.TableFamilyINet, Name: "t"}
	accept := nftables.ChainPolicyAccept
	hook := nftables.ChainHookInput
	prio := nftables.ChainPriorityRef(-10)
	gset := &nftables.Set{Table: gt, Name: "s", KeyType: nftables.TypeIPAddr, Interval: true, KeyByteOrder: binaryutil.BigEndian}
	gmark := &nftables.Set{Table: gt, Name: "m", KeyType: nftables.TypeMark, KeyByteOrder: binaryutil.NativeEndian, HasTimeout: true, Timeout: 90 * time.Second}
	key := func(a, b, c, d byte) []byte { return []byte{a, b, c, d} }
	google := googleMessages(t, func(c *nftables.Conn) {
		c.AddTable(gt)
		c.AddChain(&nftables.Chain{Table: gt, Name: "in", Hooknum: hook, Priority: prio, Type: nftables.ChainTypeFilter, Policy: &accept})
		c.AddChain(&nftables.Chain{Table: gt, Name: "helper"})
		if err := c.AddSet(gset, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.AddSet(gmark, nil); err != nil {
			t.Fatal(err)
		}
		_ = c.SetAddElements(gset, []nftables.SetElement{{Key: key(10, 0, 0, 0)}, {Key: key(11, 0, 0, 0), IntervalEnd: true}})
		_ = c.SetDeleteElements(gset, []nftables.SetElement{{Key: key(192, 168, 0, 1)}})
		_ = c.DelRule(&nftables.Rule{Table: gt, Chain: &nftables.Chain{Table: gt, Name: "in"}, Handle: 7})
		c.DelChain(&nftables.Chain{Table: gt, Name: "helper"})
		c.DelSet(gmark)
		c.DelTable(gt)
	})
	var b Batch
	policy := uint32(1)
	b.AddTable(fam, "t")
	b.AddChain(fam, "t", ChainSpec{Name: "in", Hook: &Hook{Num: 1, Priority: -10}, Type: "filter", Policy: &policy})
	b.AddChain(fam, "t", ChainSpec{Name: "helper"})
	b.AddSet(fam, "t", SetSpec{Name: "s", KeyType: 7, KeyLen: 4, Flags: SetInterval, UData: binary.NativeEndian.AppendUint32([]byte{0, 4}, 2)})
	b.AddSet(fam, "t", SetSpec{Name: "m", KeyType: 19, KeyLen: 4, Flags: SetTimeout, Timeout: 90000, UData: binary.NativeEndian.AppendUint32([]byte{0, 4}, 1)})
	b.Elems(true, fam, "t", "s", true, []model.NftElem{{Key: "\x0a\x00\x00\x00", End: "\x0b\x00\x00\x00"}})
	b.Elems(false, fam, "t", "s", false, []model.NftElem{{Key: "\xc0\xa8\x00\x01"}})
	b.DelRule(fam, "t", "in", 7)
	b.DelChain(fam, "t", "helper")
	b.DelSet(fam, "t", "m")
	b.DelTable(fam, "t")
	ours := b.msgs
	if len(ours) != len(google) {
		t.Fatalf("%d messages, google/nftables %d", len(ours), len(google))
	}
	for i := range ours {
		if o, g := message(ours[i]), message(google[i]); o != g {
			t.Errorf("message %d:\nours:\n%s\ngoogle/nftables:\n%s", i+1, o, g)
		}
	}
}
