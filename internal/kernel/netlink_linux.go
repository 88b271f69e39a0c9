package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// dumpRetries bounds the retries of a dump the kernel marks interrupted
// (NLM_F_DUMP_INTR: the table changed while it was being read). A busy host
// changes tables all the time; a few retries always got a clean dump in tests.
const dumpRetries = 10

// Netlink is the real kernel, reached over rtnetlink and generic netlink in one
// network namespace.
type Netlink struct {
	h *netlink.Handle
	// sockets serves the requests the library has no function for.
	sockets map[int]*nl.SocketHandle
	ns      netns.NsHandle
	writes  atomic.Uint64

	wg wgState

	mu       sync.Mutex
	nftConn  *nftwire.Conn // opened on first nftables call (nft_linux.go)
	nftElems nftElemCache
	nftRules ruleMemos // by table, for the next read
	nftReads map[model.NftTableKey]*nftTableRead
	byName   map[string]int
	byIndex  map[int]string

	batchMu sync.Mutex
	batch   *routeBatcher // opened on first use (route_batch_linux.go)
	// routeHint is the length of the last route list, to size the next;
	// tableHint the same for each table's (int to int): a list of 100k
	// routes grown by appends from nothing costs twice the CPU of its
	// dump.
	routeHint atomic.Int64
	tableHint sync.Map
}

var _ Interface = (*Netlink)(nil)

// Open returns a kernel bound to the network namespace at nsPath (such as
// /run/netns/NAME or /proc/PID/ns/net), or to the caller's namespace when
// nsPath is "". The sockets are opened inside that namespace and stay bound to
// it whatever thread later uses them.
func Open(nsPath string) (*Netlink, error) {
	ns := netns.None()
	if nsPath != "" {
		var err error
		ns, err = netns.GetFromPath(nsPath)
		if err != nil {
			return nil, fmt.Errorf("open network namespace %s: %w", nsPath, err)
		}
	}
	// Only the families we use: the library's default list includes XFRM,
	// whose socket fails on kernels without the xfrm module (the Debian
	// cloud kernel before it is loaded). Generic netlink carries FoU.
	h, err := netlink.NewHandleAt(ns, unix.NETLINK_ROUTE, unix.NETLINK_GENERIC)
	if err != nil {
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	sock, err := nl.GetNetlinkSocketAt(ns, netns.None(), unix.NETLINK_ROUTE)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("open netlink: %w", err)
	}
	sockets := map[int]*nl.SocketHandle{unix.NETLINK_ROUTE: {Socket: sock}}
	return &Netlink{h: h, sockets: sockets, ns: ns, byName: map[string]int{}, byIndex: map[int]string{}}, nil
}

// NsHandle returns the namespace handle (netns.None() for the caller's own).
func (k *Netlink) NsHandle() netns.NsHandle { return k.ns }

// Reopen opens another handle on k's namespace through the descriptor k
// holds, not by the path k was opened with: a namespace named by a process
// (/proc/PID/ns/net) has that path only while the process lives, and one
// named in /run/netns may be deleted and made again under the name.
func (k *Netlink) Reopen() (*Netlink, error) {
	if !k.ns.IsOpen() {
		return Open("")
	}
	return Open(fmt.Sprintf("/proc/self/fd/%d", int(k.ns)))
}

// InNamespace runs f on a locked OS thread switched into the kernel's network
// namespace, for libraries that open their sockets in the calling thread's
// namespace (wgctrl, programs started as children).
func (k *Netlink) InNamespace(f func() error) error {
	if !k.ns.IsOpen() {
		return f()
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return fmt.Errorf("get current network namespace: %w", err)
	}
	defer orig.Close()
	if err := netns.Set(k.ns); err != nil {
		return fmt.Errorf("enter network namespace: %w", err)
	}
	defer func() {
		if err := netns.Set(orig); err != nil {
			// A thread stuck in the wrong namespace must not be reused:
			// leaving it locked makes the runtime discard it.
			runtime.LockOSThread()
		}
	}()
	return f()
}

// Close releases the sockets.
func (k *Netlink) Close() error {
	k.closeNFT()
	k.h.Close()
	if k.batch != nil {
		k.batch.close()
	}
	for _, s := range k.sockets {
		s.Close()
	}
	if k.wg.client != nil {
		k.wg.client.Close()
	}
	if k.wg.genl != nil {
		k.wg.genl.Close()
	}
	if k.ns.IsOpen() {
		return k.ns.Close()
	}
	return nil
}

// Writes counts the writes made so far.
func (k *Netlink) Writes() uint64 { return k.writes.Load() }

func (k *Netlink) wrote() { k.writes.Add(1) }

// request sends a request of type typ with body (encoded by rtnl) on the
// handle's socket and waits for its acknowledgement.
func (k *Netlink) request(typ, flags int, body []byte) error {
	req := nl.NewNetlinkRequest(typ, flags|unix.NLM_F_ACK)
	req.Sockets = k.sockets
	req.AddRawData(body)
	_, err := req.Execute(unix.NETLINK_ROUTE, 0)
	return err
}

// retry runs a dump until the kernel reports it complete.
func retry(what string, f func() error) error {
	var err error
	for i := 0; i < dumpRetries; i++ {
		err = f()
		if !errors.Is(err, netlink.ErrDumpInterrupted) {
			if err != nil {
				return fmt.Errorf("list %s: %w", what, err)
			}
			return nil
		}
	}
	return fmt.Errorf("list %s: interrupted %d times in a row: %w", what, dumpRetries, err)
}

func (k *Netlink) remember(name string, index int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if old, ok := k.byIndex[index]; ok {
		delete(k.byName, old)
	}
	k.byName[name] = index
	k.byIndex[index] = name
}

func (k *Netlink) forget(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if i, ok := k.byName[name]; ok {
		delete(k.byIndex, i)
	}
	delete(k.byName, name)
}

// index resolves a link name, from the cache the last Links call filled or
// from the kernel.
func (k *Netlink) index(name string) (int, error) {
	k.mu.Lock()
	i, ok := k.byName[name]
	k.mu.Unlock()
	if ok {
		return i, nil
	}
	l, err := k.h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return 0, fmt.Errorf("link %s: %w", name, ErrNotFound)
		}
		return 0, fmt.Errorf("link %s: %w", name, err)
	}
	k.remember(name, l.Attrs().Index)
	return l.Attrs().Index, nil
}

// name resolves an index; "" for 0 or unknown.
func (k *Netlink) name(index int) string {
	if index == 0 {
		return ""
	}
	k.mu.Lock()
	n, ok := k.byIndex[index]
	k.mu.Unlock()
	if ok {
		return n
	}
	l, err := k.h.LinkByIndex(index)
	if err != nil {
		return ""
	}
	k.remember(l.Attrs().Name, index)
	return l.Attrs().Name
}

// linkRef is the minimal netlink.Link the library needs to address a link by index.
func (k *Netlink) linkRef(name string) (netlink.Link, error) {
	i, err := k.index(name)
	if err != nil {
		return nil, err
	}
	return &netlink.Dummy{LinkAttrs: netlink.LinkAttrs{Index: i, Name: name}}, nil
}

func toAddr(ip net.IP) netip.Addr {
	if ip == nil {
		return netip.Addr{}
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return netip.Addr{}
	}
	return a.Unmap()
}

// toPrefix converts a prefix; its mask's length gives the family. An
// IPv6 one stays IPv6 also when IPv4-mapped (addrOf says why), while an
// IPv4 one may come in net.IP's 16-byte form.
func toPrefix(n *net.IPNet) netip.Prefix {
	if n == nil {
		return netip.Prefix{}
	}
	a := toAddr(n.IP)
	if len(n.Mask) == net.IPv6len {
		if v, ok := netip.AddrFromSlice(n.IP.To16()); ok {
			a = v
		}
	}
	ones, _ := n.Mask.Size()
	return netip.PrefixFrom(a, ones)
}

func fromAddr(a netip.Addr) net.IP {
	if !a.IsValid() {
		return nil
	}
	return net.IP(a.AsSlice())
}

func fromPrefix(p netip.Prefix) *net.IPNet {
	if !p.IsValid() {
		return nil
	}
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

// errnoUnsupported tells kernel "no such feature" answers apart.
func errnoUnsupported(err error) bool {
	return errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EAFNOSUPPORT)
}
