package daemon

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Netlink messages as the kernel sends them, built by hand so that the
// tests pin the wire format the decoders read.

func nlattr(typ uint16, v []byte) []byte {
	b := make([]byte, unix.SizeofRtAttr, (unix.SizeofRtAttr+len(v)+3)&^3)
	binary.NativeEndian.PutUint16(b, uint16(unix.SizeofRtAttr+len(v)))
	binary.NativeEndian.PutUint16(b[2:], typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func u32(v uint32) []byte  { return binary.NativeEndian.AppendUint32(nil, v) }
func cstr(s string) []byte { return append([]byte(s), 0) }

func msg(typ uint16, hdr []byte, attrs ...[]byte) syscall.NetlinkMessage {
	d := append([]byte(nil), hdr...)
	for _, a := range attrs {
		d = append(d, a...)
	}
	return syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: typ, Len: uint32(unix.NLMSG_HDRLEN + len(d))}, Data: d}
}

// routeMsg is an RTM_NEWROUTE as fib_dump_info writes it: table in rtm_table
// (252, RT_TABLE_COMPAT, above 255) and RTA_TABLE, then RTA_DST.
func routeMsg(typ uint16, proto, table int, dst string) syscall.NetlinkMessage {
	p := netip.MustParsePrefix(dst)
	fam := byte(unix.AF_INET)
	if p.Addr().Is6() {
		fam = unix.AF_INET6
	}
	rt := byte(table)
	if table > 255 {
		rt = unix.RT_TABLE_COMPAT
	}
	hdr := []byte{fam, byte(p.Bits()), 0, 0, rt, byte(proto), 0, unix.RTN_UNICAST, 0, 0, 0, 0}
	attrs := [][]byte{nlattr(unix.RTA_TABLE, u32(uint32(table)))}
	if p.Bits() > 0 {
		attrs = append(attrs, nlattr(unix.RTA_DST, p.Addr().AsSlice()))
	}
	attrs = append(attrs, nlattr(unix.RTA_OIF, u32(7)))
	return msg(typ, hdr, attrs...)
}

func ruleMsg(proto int, prio uint32, withPrio bool) syscall.NetlinkMessage {
	hdr := []byte{unix.AF_INET, 0, 0, 0, 100, 0, 0, unix.FR_ACT_TO_TBL, 0, 0, 0, 0}
	attrs := [][]byte{nlattr(unix.FRA_TABLE, u32(100))}
	if withPrio {
		attrs = append(attrs, nlattr(unix.FRA_PRIORITY, u32(prio)))
	}
	attrs = append(attrs, nlattr(unix.FRA_PROTOCOL, []byte{byte(proto)}))
	return msg(unix.RTM_NEWRULE, hdr, attrs...)
}

func linkMsg(typ uint16, index int32, name, alias string, master int32) syscall.NetlinkMessage {
	hdr := make([]byte, unix.SizeofIfInfomsg)
	binary.NativeEndian.PutUint32(hdr[4:], uint32(index))
	var attrs [][]byte
	if name != "" {
		attrs = append(attrs, nlattr(unix.IFLA_IFNAME, cstr(name)))
	}
	attrs = append(attrs, nlattr(unix.IFLA_MTU, u32(1500)))
	if alias != "" {
		attrs = append(attrs, nlattr(unix.IFLA_IFALIAS, cstr(alias)))
	}
	if master != 0 {
		attrs = append(attrs, nlattr(unix.IFLA_MASTER, u32(uint32(master))))
	}
	return msg(typ, hdr, attrs...)
}

func addrMsg(index int32) syscall.NetlinkMessage {
	hdr := []byte{unix.AF_INET, 24, 0, 0, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(hdr[4:], uint32(index))
	return msg(unix.RTM_NEWADDR, hdr, nlattr(unix.IFA_ADDRESS, []byte{10, 0, 0, 1}))
}

// withAttr appends an attribute to m.
func withAttr(m syscall.NetlinkMessage, attr []byte) syscall.NetlinkMessage {
	m.Data = append(append([]byte(nil), m.Data...), attr...)
	m.Header.Len += uint32(len(attr))
	return m
}

func nftMsg(msgType uint16, family byte, table string) syscall.NetlinkMessage {
	hdr := []byte{family, 0, 0, 0}
	var attrs [][]byte
	if table != "" {
		attrs = append(attrs, nlattr(1, cstr(table)), nlattr(2, cstr("chain0")))
	}
	return msg(nfnlSubsysNftables<<8|msgType, hdr, attrs...)
}

const (
	nftMsgNewTable   = 0
	nftMsgNewSetElem = 12
	protoBird        = 12
)

// filterFixture is a configuration and the kernel state a pass read: links
// br0 (declared, index 3), nr0 (not declared, owned, index 4), eth0 (foreign,
// the device of one of our routes, index 2), eth9 (foreign, index 9).
func filterFixture() *watchSet {
	want := model.NewState()
	want.Protocol = model.DefaultProtocol
	want.Links["br0"] = &model.Link{Name: "br0", Kind: "bridge"}
	want.Routes = []model.Route{
		{Table: 100, Dst: netip.MustParsePrefix("10.1.0.0/24"), Dev: "br0"},
		{Table: 1000, Dst: netip.MustParsePrefix("2001:db8::/64"), Dev: "br0"},
		{Table: model.TableMain, Dst: netip.MustParsePrefix("0.0.0.0/0"), Gateway: netip.MustParseAddr("10.1.0.254")},
	}
	want.Rules = []model.Rule{{Priority: 1000, Table: 100}}
	want.NFTables = []model.NftTable{{Family: "inet", Name: "nr"}}
	have := model.NewState()
	have.Links["lo"] = &model.Link{Name: "lo", Index: 1}
	have.Links["eth0"] = &model.Link{Name: "eth0", Index: 2}
	have.Links["br0"] = &model.Link{Name: "br0", Index: 3, Owned: true}
	have.Links["nr0"] = &model.Link{Name: "nr0", Index: 4, Owned: true}
	have.Links["eth9"] = &model.Link{Name: "eth9", Index: 9}
	have.Routes = []model.Route{
		{Table: 100, Dst: netip.MustParsePrefix("10.1.0.0/24"), Dev: "br0", Protocol: model.DefaultProtocol},
		{Table: model.TableMain, Dst: netip.MustParsePrefix("0.0.0.0/0"), Dev: "eth0", Protocol: model.DefaultProtocol},
	}
	owned := map[model.NftTableKey]bool{{Family: "ip", Name: "old"}: true, {Family: "ip", Name: "gone"}: false}
	return buildWatchSet(want, have, owned)
}

func TestEventFilter(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		m    syscall.NetlinkMessage
		wake bool
	}{
		{"route of ours, undeclared", srcRoutes, routeMsg(unix.RTM_NEWROUTE, model.DefaultProtocol, 200, "192.0.2.0/24"), true},
		{"route of ours deleted", srcRoutes, routeMsg(unix.RTM_DELROUTE, model.DefaultProtocol, 100, "10.1.0.0/24"), true},
		{"foreign route, declared key", srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "10.1.0.0/24"), true},
		{"foreign route, declared key deleted", srcRoutes, routeMsg(unix.RTM_DELROUTE, protoBird, 100, "10.1.0.0/24"), true},
		{"foreign route, declared IPv6 key, table > 255", srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 1000, "2001:db8::/64"), true},
		{"foreign default route, declared", srcRoutes, routeMsg(unix.RTM_NEWROUTE, unix.RTPROT_BOOT, model.TableMain, "0.0.0.0/0"), true},
		{"foreign route, other destination", srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "10.2.0.0/24"), false},
		{"foreign route, other prefix length", srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "10.1.0.0/25"), false},
		{"foreign route, declared destination in another table", srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 101, "10.1.0.0/24"), false},
		{"foreign IPv6 route, other table", srcRoutes, routeMsg(unix.RTM_DELROUTE, protoBird, 1001, "2001:db8::/64"), false},
		{"foreign default route, other table", srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "0.0.0.0/0"), false},
		{"route message cut short", srcRoutes, msg(unix.RTM_NEWROUTE, []byte{unix.AF_INET, 24, 0}), true},
		{"route with a broken attribute", srcRoutes, msg(unix.RTM_NEWROUTE, []byte{unix.AF_INET, 24, 0, 0, 100, protoBird, 0, 1, 0, 0, 0, 0}, []byte{200, 0, 1, 0}), true},
		{"route with a destination of the wrong size", srcRoutes, msg(unix.RTM_NEWROUTE, []byte{unix.AF_INET, 24, 0, 0, 100, protoBird, 0, 1, 0, 0, 0, 0}, nlattr(unix.RTA_DST, []byte{10, 2, 0})), true},
		{"unknown message on the route socket", srcRoutes, msg(unix.RTM_NEWNEIGH, make([]byte, 12)), true},

		{"rule of ours", srcRules, ruleMsg(model.DefaultProtocol, 5000, true), true},
		{"foreign rule, declared priority", srcRules, ruleMsg(unix.RTPROT_BOOT, 1000, true), true},
		{"foreign rule, other priority", srcRules, ruleMsg(unix.RTPROT_BOOT, 2000, true), false},
		{"foreign rule, priority 0", srcRules, ruleMsg(unix.RTPROT_KERNEL, 0, false), false},
		{"rule message cut short", srcRules, msg(unix.RTM_NEWRULE, []byte{2, 0, 0}), true},

		{"declared link", srcLinks, linkMsg(unix.RTM_NEWLINK, 3, "br0", "", 0), true},
		{"declared link appears with a new index", srcLinks, linkMsg(unix.RTM_NEWLINK, 30, "br0", "", 0), true},
		{"owned link deleted", srcLinks, linkMsg(unix.RTM_DELLINK, 4, "nr0", "netreconcile", 0), true},
		{"owned link renamed", srcLinks, linkMsg(unix.RTM_NEWLINK, 4, "renamed", "", 0), true},
		{"link with the marker", srcLinks, linkMsg(unix.RTM_NEWLINK, 40, "other", "netreconcile: x", 0), true},
		{"device of a route of ours goes down", srcLinks, linkMsg(unix.RTM_NEWLINK, 2, "eth0", "", 0), true},
		{"foreign link enslaved to ours", srcLinks, linkMsg(unix.RTM_NEWLINK, 9, "eth9", "", 3), true},
		{"foreign link", srcLinks, linkMsg(unix.RTM_NEWLINK, 9, "eth9", "", 0), false},
		{"new foreign link", srcLinks, linkMsg(unix.RTM_NEWLINK, 50, "veth77", "", 0), false},
		{"link without a name", srcLinks, linkMsg(unix.RTM_NEWLINK, 9, "", "", 0), true},

		{"address on a declared link", srcAddresses, addrMsg(3), true},
		{"address on an owned link", srcAddresses, addrMsg(4), true},
		{"address on the device of a route of ours", srcAddresses, addrMsg(2), true},
		{"address on a foreign link", srcAddresses, addrMsg(9), false},
		{"address of our protocol on a foreign link", srcAddresses, withAttr(addrMsg(9), nlattr(rtnl.IFA_PROTO, []byte{245})), true},
		{"address of another protocol on a foreign link", srcAddresses, withAttr(addrMsg(9), nlattr(rtnl.IFA_PROTO, []byte{3})), false},
		{"address on a link never read", srcAddresses, addrMsg(51), true},
		{"address message cut short", srcAddresses, msg(unix.RTM_NEWADDR, []byte{2, 24}), true},

		{"declared nftables table", srcNftables, nftMsg(nftMsgNewSetElem, unix.NFPROTO_INET, "nr"), true},
		{"owned nftables table", srcNftables, nftMsg(nftMsgNewTable, unix.NFPROTO_IPV4, "old"), true},
		{"table the ledger forgot", srcNftables, nftMsg(nftMsgNewTable, unix.NFPROTO_IPV4, "gone"), false},
		{"same name, other family", srcNftables, nftMsg(nftMsgNewSetElem, unix.NFPROTO_IPV4, "nr"), false},
		{"foreign nftables table", srcNftables, nftMsg(nftMsgNewSetElem, unix.NFPROTO_INET, "filter"), false},
		{"end of a transaction", srcNftables, nftMsg(nftMsgNewGen, 0, ""), false},
		{"nftables message without a table", srcNftables, nftMsg(nftMsgNewTable, unix.NFPROTO_INET, ""), true},
		{"nftables message of an unknown family", srcNftables, nftMsg(nftMsgNewTable, 99, "nr"), true},
		{"message of another netfilter subsystem", srcNftables, msg(1<<8, []byte{2, 0, 0, 0}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewEventFilter()
			f.swap(filterFixture())
			if got := f.decide(tc.src, tc.m); got != tc.wake {
				t.Errorf("wake = %v, want %v", got, tc.wake)
			}
			result := "dropped"
			if tc.wake {
				result = "woke"
			}
			if n := counterValue(t, f, tc.src, result); n != 1 {
				t.Errorf("netreconcile_events_total{source=%q,result=%q} = %v, want 1", tc.src, result, n)
			}
			// Without a snapshot (start, a configuration change, a
			// failed read) everything wakes.
			f.swap(nil)
			if !f.decide(tc.src, tc.m) {
				t.Error("dropped without a snapshot")
			}
		})
	}
}

func counterValue(t *testing.T, f *EventFilter, src, result string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := f.count.WithLabelValues(src, result).Write(&m); err != nil {
		t.Fatal(err)
	}
	return uint64(m.GetCounter().GetValue())
}

// No filter (a source built with nil) wakes on everything.
func TestNoEventFilter(t *testing.T) {
	var f *EventFilter
	if !f.decide(srcRoutes, routeMsg(unix.RTM_NEWROUTE, protoBird, 1, "10.9.0.0/24")) {
		t.Error("no filter: dropped")
	}
}
