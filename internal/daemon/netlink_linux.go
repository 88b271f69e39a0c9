package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"syscall"

	mdnl "github.com/mdlayher/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
	"github.com/netreconcile/netreconcile/internal/model"
)

// eventBufferSize is the receive buffer of each notification socket. The
// default (about 200 KiB) overflows with ENOBUFS when thousands of routes
// change at once (a routing daemon converging, a link going down with its
// routes); 4 MiB holds tens of thousands of notifications. It is set with
// SO_RCVBUFFORCE, which CAP_NET_ADMIN allows past net.core.rmem_max.
const eventBufferSize = 4 << 20

// KernelEvents returns the sources that wake the loop on rtnetlink and
// nftables notifications in the network namespace ns (netns.None() for the
// daemon's own): links, addresses, routes and rules of both families, and
// every committed nftables change.
//
// Each notification is judged by f (filter.go; nil wakes on every one) and
// wakes the loop only if it may change the plan. A subscription that fails
// (a receive error, ENOBUFS after a storm) has lost events: the source
// returns, runSource subscribes again and wakes the loop for a full pass.
func KernelEvents(ns netns.NsHandle, f *EventFilter) []Source {
	src := func(name, what string, proto int, groups ...uint) Source {
		return kernelSource{SourceFunc{name, func(ctx context.Context, wake func()) error {
			return subscribe(ctx, ns, proto, groups, what, f, wake)
		}}}
	}
	return []Source{
		src("netlink links", srcLinks, unix.NETLINK_ROUTE, unix.RTNLGRP_LINK),
		src("netlink addresses", srcAddresses, unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_IFADDR, unix.RTNLGRP_IPV6_IFADDR),
		src("netlink routes", srcRoutes, unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_ROUTE, unix.RTNLGRP_IPV6_ROUTE),
		// The library has no rule subscription: a raw socket on the rule
		// groups, like the others.
		src("netlink rules", srcRules, unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE),
		src("nftables", srcNftables, unix.NETLINK_NETFILTER, nfnlgrpNftables),
		// Nexthop objects wake nothing: only a route that uses one
		// changes with it, silently, and ours use none unless someone
		// rewrote them (sourceKinds). A routing daemon's nexthop churn
		// costs a decode each.
		src("netlink nexthops", srcNexthops, unix.NETLINK_ROUTE, unix.RTNLGRP_NEXTHOP),
	}
}

// decide judges one notification from source src (srcLinks...) against the
// snapshot in force, counts the decision and reports whether to wake. A
// message it cannot decode wakes; so does every message while there is no
// snapshot.
func (f *EventFilter) decide(src string, m syscall.NetlinkMessage) bool {
	w := f.snapshot()
	table := everyTable
	if src == srcRoutes {
		if e, ok := decodeRoute(m); ok {
			table = e.table
		}
	}
	if src == srcNexthops {
		f.breakVouch()
		return f.judged(src, false, table)
	}
	if w == nil {
		return f.judged(src, true, table)
	}
	wake := true
	switch src {
	case srcLinks:
		if e, ok := decodeLink(m); ok {
			wake = w.link(e)
		}
	case srcAddresses:
		if e, ok := decodeAddr(m); ok {
			wake = w.addr(e)
		}
	case srcRoutes:
		if e, ok := decodeRoute(m); ok {
			wake = w.route(e)
			// A route of ours: its notification says what the
			// table's read would find, without a dump.
			if c, ok := f.routeChangeOf(m, e); ok && wake {
				f.markRouteChange(table, c)
				f.woke[src].Inc()
				return true
			}
		}
	case srcRules:
		if e, ok := decodeRule(m); ok {
			wake = w.rule(e)
		}
	case srcNftables:
		if e, ok := decodeNft(m); ok {
			wake = w.nft(e)
		}
	}
	return f.judged(src, wake, table)
}

// nfnlgrpNftables is NFNLGRP_NFTABLES: every committed nftables change (what
// `nft monitor` shows).
const nfnlgrpNftables = 7

// subscribe listens to groups of a netlink protocol in ns and wakes the loop
// whenever a message from the kernel passes f (source what), until ctx is
// done. The messages of one datagram wake once; each is judged (and
// counted). The route socket carries f's kernel-side prefilter.
func subscribe(ctx context.Context, ns netns.NsHandle, proto int, groups []uint, what string, f *EventFilter, wake func()) error {
	s, err := nl.SubscribeAt(ns, netns.None(), proto, groups...)
	if err != nil {
		return fmt.Errorf("subscribe to %s: %w", what, err)
	}
	if err := s.SetReceiveBufferSize(eventBufferSize, true); err != nil {
		s.Close()
		return fmt.Errorf("subscribe to %s: set receive buffer: %w", what, err)
	}
	// The descriptor leaves the filter's list before it is closed: a
	// number reused by another file must never get a prefilter.
	var once sync.Once
	closeSock := func() {
		once.Do(func() {
			if what == srcRoutes {
				f.removeRouteSocket(s.GetFd())
			}
			s.Close()
		})
	}
	r, err := newEventReader(s, eventBufLen)
	if err != nil {
		s.Close()
		return fmt.Errorf("subscribe to %s: %w", what, err)
	}
	closeBoth := closeSock
	closeSock = func() { r.close(); closeBoth() }
	if what == srcRoutes {
		f.addRouteSocket(s.GetFd())
	}
	stop := context.AfterFunc(ctx, closeSock)
	defer stop()
	// Listening from here: what the kernel changes is reported, until
	// the subscription fails (route vouching, filter_pass.go).
	f.subscribed(what, wake)
	defer f.unsubscribed(what)
	for {
		msgs, from, err := r.read()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			closeSock()
			if errors.Is(err, unix.ENOBUFS) {
				return fmt.Errorf("%s subscription overflowed: %w", what, err)
			}
			return fmt.Errorf("%s subscription closed: %w", what, err)
		}
		if from.Pid != nl.PidKernel {
			continue
		}
		woke := false
		for _, m := range msgs {
			if m.Header.Type == unix.NLMSG_DONE || m.Header.Type == unix.NLMSG_ERROR || m.Header.Type == unix.NLMSG_NOOP {
				continue
			}
			if f.ownWrite(what, m) {
				continue
			}
			if f.decide(what, m) && !woke {
				wake()
				woke = true
			}
		}
	}
}

// eventBufLen is the room for one notification datagram. The kernel sends
// each notification in a datagram of its own, a few hundred bytes for a
// route and a few KiB for a link; one that does not fit is delivered
// truncated and wakes the loop, as any message the filter cannot read.
const eventBufLen = 32 << 10

// eventReader reads a subscription's datagrams into a buffer of its own on
// the heap, through a duplicate of the socket's descriptor (the same
// socket, waited on with the runtime's poller). The library's Receive keeps
// a 64 KiB array on its goroutine's stack: five subscriptions, each waiting
// in it, held 128 KiB of stack apiece.
type eventReader struct {
	f   *os.File
	rc  syscall.RawConn
	buf []byte
}

func newEventReader(s *nl.NetlinkSocket, size int) (*eventReader, error) {
	fd, err := unix.FcntlInt(uintptr(s.GetFd()), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("duplicate socket: %w", err)
	}
	// The descriptor shares the library's non-blocking flag: os.NewFile
	// puts it on the poller.
	f := os.NewFile(uintptr(fd), "netlink events")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("duplicate socket: %w", err)
	}
	return &eventReader{f: f, rc: rc, buf: make([]byte, size)}, nil
}

func (r *eventReader) close() { r.f.Close() }

// read waits for one datagram and returns its messages, which point into
// the reader's buffer until the next read.
func (r *eventReader) read() ([]syscall.NetlinkMessage, *unix.SockaddrNetlink, error) {
	var (
		n    int
		from unix.Sockaddr
		rerr error
	)
	err := r.rc.Read(func(fd uintptr) bool {
		n, from, rerr = unix.Recvfrom(int(fd), r.buf, 0)
		return rerr != unix.EAGAIN
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, nil, err
	}
	sa, ok := from.(*unix.SockaddrNetlink)
	if !ok {
		return nil, nil, errors.New("receive: not a netlink address")
	}
	msgs, err := syscall.ParseNetlinkMessage(r.buf[:n])
	if err != nil {
		return []syscall.NetlinkMessage{unreadable}, sa, nil
	}
	return msgs, sa, nil
}

// unreadable stands for a datagram that does not parse (truncated,
// malformed): no decoder knows its type, so the filter wakes for it and
// marks its source's kind dirty.
var unreadable = syscall.NetlinkMessage{Header: syscall.NlMsghdr{Type: math.MaxUint16}}

// decodeRoute reads protocol, table and destination from RTM_NEWROUTE and
// RTM_DELROUTE. ok is false for anything it cannot read.
func decodeRoute(m syscall.NetlinkMessage) (e routeEvent, ok bool) {
	if m.Header.Type != unix.RTM_NEWROUTE && m.Header.Type != unix.RTM_DELROUTE {
		return e, false
	}
	var r rtnl.Route
	if rtnl.DecodeRoute(m.Data, &r) != nil {
		return e, false
	}
	return routeEvent{protocol: int(r.Protocol), table: int(r.Table), dst: r.Dst.Masked()}, true
}

// routeChange is the change of a route notification with its links named
// by names: RTM_DELROUTE, or an RTM_NEWROUTE that took its key whole. ok is
// false when it cannot be read, names a link names does not know, or adds
// a route beside another of its key: the kernel tells a create with
// NLM_F_EXCL and a replace with NLM_F_REPLACE, and clears NLM_F_EXCL for
// a route it adds beside another (fib_table_insert, fib6_add_rt2node).
func routeChange(m syscall.NetlinkMessage, names map[uint32]string) (actual.RouteChange, bool) {
	del := m.Header.Type == unix.RTM_DELROUTE
	if !del && (m.Header.Flags&(unix.NLM_F_EXCL|unix.NLM_F_REPLACE) == 0 || m.Header.Flags&unix.NLM_F_APPEND != 0) {
		return actual.RouteChange{}, false
	}
	r, ok := kernel.RouteOf(m.Data, func(i uint32) string { return names[i] })
	if !ok {
		return actual.RouteChange{}, false
	}
	return actual.RouteChange{Delete: del, Route: r}, true
}

// decodeRule reads protocol and priority from RTM_NEWRULE and RTM_DELRULE
// (a rule without FRA_PRIORITY has priority 0).
func decodeRule(m syscall.NetlinkMessage) (e ruleEvent, ok bool) {
	if m.Header.Type != unix.RTM_NEWRULE && m.Header.Type != unix.RTM_DELRULE {
		return e, false
	}
	var r rtnl.Rule
	if rtnl.DecodeRule(m.Data, &r) != nil {
		return e, false
	}
	return ruleEvent{protocol: int(r.Protocol), priority: r.Priority}, true
}

// decodeLink reads index, name, alias, master and lower link from
// RTM_NEWLINK and RTM_DELLINK.
func decodeLink(m syscall.NetlinkMessage) (e linkEvent, ok bool) {
	if m.Header.Type != unix.RTM_NEWLINK && m.Header.Type != unix.RTM_DELLINK {
		return e, false
	}
	var l rtnl.Link
	if rtnl.DecodeLink(m.Data, &l) != nil || l.Name == "" {
		return e, false
	}
	return linkEvent{index: l.Index, name: l.Name, alias: l.Alias, master: int32(l.Master), lower: int32(l.Link)}, true
}

// decodeAddr reads the link index and protocol of RTM_NEWADDR and
// RTM_DELADDR.
func decodeAddr(m syscall.NetlinkMessage) (e addrEvent, ok bool) {
	if m.Header.Type != unix.RTM_NEWADDR && m.Header.Type != unix.RTM_DELADDR {
		return e, false
	}
	var a rtnl.Address
	if rtnl.DecodeAddress(m.Data, &a) != nil {
		return e, false
	}
	addr := a.Local
	if !addr.IsValid() {
		addr = a.Address
	}
	return addrEvent{index: int32(a.Index), proto: a.Protocol, addr: addr}, true
}

// nftables message types (linux/netfilter/nf_tables.h), within subsystem
// NFNL_SUBSYS_NFTABLES.
const (
	nfnlSubsysNftables = 10
	nftMsgNewGen       = 15
	nfgenmsgLen        = 4
	// nftaTableAttr is attribute 1 of every nftables object message:
	// NFTA_TABLE_NAME, NFTA_CHAIN_TABLE, NFTA_RULE_TABLE, NFTA_SET_TABLE,
	// NFTA_SET_ELEM_LIST_TABLE, NFTA_OBJ_TABLE, NFTA_FLOWTABLE_TABLE.
	nftaTableAttr = 1
)

// nftFamilies names the nfgenmsg families as nft does.
var nftFamilies = map[byte]string{
	unix.NFPROTO_INET: "inet", unix.NFPROTO_IPV4: "ip", unix.NFPROTO_ARP: "arp",
	unix.NFPROTO_NETDEV: "netdev", unix.NFPROTO_BRIDGE: "bridge", unix.NFPROTO_IPV6: "ip6",
}

// decodeNft reads the table an nftables notification is about, or that it
// is the end of a transaction (NEWGEN).
func decodeNft(m syscall.NetlinkMessage) (e nftEvent, ok bool) {
	if m.Header.Type>>8 != nfnlSubsysNftables || len(m.Data) < nfgenmsgLen {
		return e, false
	}
	if m.Header.Type&0xff == nftMsgNewGen {
		return nftEvent{gen: true}, true
	}
	fam, known := nftFamilies[m.Data[0]]
	if !known {
		return e, false
	}
	ad, err := mdnl.NewAttributeDecoder(m.Data[nfgenmsgLen:])
	if err != nil {
		return e, false
	}
	var name string
	for name == "" && ad.Next() {
		if ad.Type() == nftaTableAttr {
			name = ad.String()
		}
	}
	if ad.Err() != nil || name == "" {
		return e, false
	}
	return nftEvent{table: model.NftTableKey{Family: fam, Name: name}}, true
}
