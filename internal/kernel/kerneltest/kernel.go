// Package kerneltest is an in-memory kernel.Interface for logic tests, kept
// out of the production package as Calico Felix keeps its mocknetlink and
// google/nftables its nftest: nothing the command links imports it.
package kerneltest

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"syscall"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Kernel is an in-memory kernel for unit tests of the diff and apply logic,
// with failure injection in the manner of Calico Felix's mocknetlink: a
// call of a method can be made to fail once or always, on any object or on
// one (FailNext, FailOnce, FailOn, FailAlways).
//
// It keeps the kernel rules the reconciler relies on (a route's key is
// unique, a link needs its parents, deleting a link takes its addresses,
// routes and veth peer; an nftables batch is committed whole or not at all;
// WireGuard peers are patched one by one) and nothing more. It proves
// logic, never a feature. Dump renders its state as ip, nft and wg lines.
type Kernel struct {
	// Compiler compiles the rules of engines on this kernel (NFTCompiler):
	// set it to refuse texts.
	Compiler *Compiler

	mu        sync.Mutex
	links     map[string]*model.Link
	nextIndex int
	addrs     map[model.AddressKey]model.Address
	// addrSeq orders addresses as the kernel's list of a link does: a
	// deleted primary's first secondary is the one promoted.
	addrSeq  map[model.AddressKey]uint64
	addrNext uint64
	// bondMTU is the MTU each bond member had when it joined, which it
	// gets back when released.
	bondMTU map[string]int
	routes  map[model.RouteKey]model.Route
	rules   []model.Rule
	fou     map[model.FouKey]model.FouPort
	nft     map[model.NftTableKey]*nftTable
	// nftHandle is the namespace's table handle counter.
	nftHandle uint64
	wg        map[string]*wgDevice
	// sysctls are the global parameters and the "all" and "default"
	// ones; linkSysctls the links' own, by ifindex, once written
	// (sysctl.go).
	sysctls     map[string]string
	linkSysctls map[int]map[string]string
	writes      uint64
	next        map[string][]error
	on          map[string]*failure
	fired       []string
	// Log lists every write that succeeded, as "Method id".
	Log []string

	// NoWireGuardModule makes AddLink refuse kind wireguard
	// (ErrUnsupported), as a kernel without the module does; the device
	// then comes from StartUserspaceWireGuard, unless NoUserspaceWireGuard
	// refuses that too (no wireguard-go may run).
	NoWireGuardModule, NoUserspaceWireGuard bool
	// NoNFTables makes every nftables call fail with ErrUnsupported.
	NoNFTables bool
	// RecordsAddressProtocols makes the kernel keep the protocol an
	// address is added with (IFA_PROTO, Linux 6.3); without it addresses
	// have none, as before 6.3.
	RecordsAddressProtocols bool
}

// failure is an injected error, for n more calls (n < 0: until cleared).
type failure struct {
	err error
	n   int
}

var _ kernel.Interface = (*Kernel)(nil)

// New returns an empty kernel holding only lo.
func New() *Kernel {
	f := &Kernel{
		links:   map[string]*model.Link{},
		addrs:   map[model.AddressKey]model.Address{},
		addrSeq: map[model.AddressKey]uint64{},
		bondMTU: map[string]int{},
		routes:  map[model.RouteKey]model.Route{},
		fou:     map[model.FouKey]model.FouPort{},
		nft:     map[model.NftTableKey]*nftTable{},
		wg:      map[string]*wgDevice{},
		next:    map[string][]error{},

		sysctls:     maps.Clone(defaultSysctls),
		linkSysctls: map[int]map[string]string{},
		on:          map[string]*failure{},
	}
	f.PutLink(&model.Link{Name: "lo", Kind: model.KindDevice, MTU: 65536, Up: true})
	return f
}

// Failures are injected by Call (calls.go) and object: link names for link
// methods and WireGuard devices, the table key ("inet t") for NFTApply and
// NFTTable, the route key's String() for the writes of WriteRoutes, the
// public key in base64 for ConfigureWireGuardPeer, the key's String() for
// the others; dumps have no object.

// FailNext makes the next call c fail with err, whatever its object;
// several calls queue several failures.
func (f *Kernel) FailNext(c Call, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next[c.name] = append(f.next[c.name], err)
}

// FailOn makes every call c on the object id fail with err until cleared
// with a nil err.
func (f *Kernel) FailOn(c Call, id string, err error) { f.failOn(c, id, err, -1) }

// FailOnce makes the next call c on the object id fail with err.
func (f *Kernel) FailOnce(c Call, id string, err error) { f.failOn(c, id, err, 1) }

// FailAlways makes every call c fail with err, whatever its object, until
// cleared with a nil err.
func (f *Kernel) FailAlways(c Call, err error) { f.failOn(c, "*", err, -1) }

func (f *Kernel) failOn(c Call, id string, err error, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.on, c.name+" "+id)
		return
	}
	f.on[c.name+" "+id] = &failure{err, n}
}

// ClearFailures drops every failure planned and not yet fired.
func (f *Kernel) ClearFailures() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next = map[string][]error{}
	f.on = map[string]*failure{}
}

// Fired lists the injected failures that happened, as "Method id: error",
// and forgets them.
func (f *Kernel) Fired() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := f.fired
	f.fired = nil
	return out
}

// injected returns the failure planned for this call, if any. Called locked.
func (f *Kernel) injected(c Call, id string) error {
	method := c.name
	var err error
	if q := f.next[method]; len(q) > 0 {
		f.next[method], err = q[1:], q[0]
	} else {
		for _, k := range []string{method + " " + id, method + " *"} {
			if x, ok := f.on[k]; ok {
				err = x.err
				if x.n--; x.n == 0 {
					delete(f.on, k)
				}
				break
			}
		}
	}
	if err == nil {
		return nil
	}
	f.fired = append(f.fired, fmt.Sprintf("%s %s: %v", method, id, err))
	return fmt.Errorf("%s %s: %w", method, id, err)
}

// write counts a write attempt and returns the injected failure, if any.
func (f *Kernel) write(c Call, id string) error {
	f.writes++
	return f.injected(c, id)
}

func (f *Kernel) logged(c Call, id string) { f.Log = append(f.Log, c.name+" "+id) }

// PutLink stores a link as it is (foreign unless Owned), without a write.
func (f *Kernel) PutLink(l *model.Link) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := cloneLink(l)
	f.nextIndex++
	c.Index = f.nextIndex
	c.Origin = ""
	if c.Veth != nil && c.Veth.PeerNetNS == "" {
		c.Veth.PeerNSID = -1 // the peer is here, as the kernel reads it
	}
	f.links[c.Name] = c
	f.newLinkSysctls(c.Index)
}

// PutAddress, PutRoute, PutRule and PutFou store objects without a write,
// to set up foreign (or previously applied) state.
func (f *Kernel) PutAddress(a model.Address) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a.Owned, a.Origin = false, ""
	f.putAddr(a)
}

// PutRoute stores a route with its Protocol, as the kernel holds it.
func (f *Kernel) PutRoute(r model.Route) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Origin = model.Origin{}
	normalizeMetric(&r)
	f.routes[r.Key()] = r
}

// PutRule stores a rule with its Protocol.
func (f *Kernel) PutRule(r model.Rule) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r.Origin = ""
	f.rules = append(f.rules, r)
}

// PutFou stores an open FoU port.
func (f *Kernel) PutFou(p model.FouPort) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p.Owned, p.Origin = false, ""
	f.fou[p.Key()] = p
}

func cloneLink(l *model.Link) *model.Link {
	c := *l
	if l.Veth != nil {
		v := *l.Veth
		c.Veth = &v
	}
	if l.VXLAN != nil {
		v := *l.VXLAN
		c.VXLAN = &v
	}
	if l.IPVlan != nil {
		v := *l.IPVlan
		c.IPVlan = &v
	}
	if l.VLAN != nil {
		v := *l.VLAN
		c.VLAN = &v
	}
	if l.MACVlan != nil {
		v := *l.MACVlan
		c.MACVlan = &v
	}
	if l.VRF != nil {
		v := *l.VRF
		c.VRF = &v
	}
	if l.Bond != nil {
		v := *l.Bond
		c.Bond = &v
	}
	if l.Tunnel != nil {
		v := *l.Tunnel
		if l.Tunnel.Encap != nil {
			e := *l.Tunnel.Encap
			v.Encap = &e
		}
		c.Tunnel = &v
	}
	if l.WireGuard != nil {
		v := *l.WireGuard
		c.WireGuard = &v
	}
	return &c
}

// Links lists every link.
func (f *Kernel) Links() ([]*model.Link, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallLinks, ""); err != nil {
		return nil, fmt.Errorf("list links: %w", err)
	}
	out := make([]*model.Link, 0, len(f.links))
	for _, n := range sortedNames(f.links) {
		c := cloneLink(f.links[n])
		c.Adopt = false
		out = append(out, c)
	}
	return out, nil
}

func sortedNames(m map[string]*model.Link) []string {
	ns := make([]string, 0, len(m))
	for n := range m {
		ns = append(ns, n)
	}
	sort.Strings(ns)
	return ns
}

// Addresses lists every address.
func (f *Kernel) Addresses() ([]model.Address, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallAddresses, ""); err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	out := make([]model.Address, 0, len(f.addrs))
	for _, a := range f.addrs {
		out = append(out, a)
	}
	model.SortAddresses(out)
	return out, nil
}

// Routes lists routes, of one protocol unless protocol is 0.
func (f *Kernel) Routes(protocol int) ([]model.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallRoutes, ""); err != nil {
		return nil, fmt.Errorf("list routes: %w", err)
	}
	var out []model.Route
	for _, r := range f.routes {
		if protocol == 0 || int(r.Protocol) == protocol {
			out = append(out, r)
		}
	}
	model.SortRoutes(out)
	return out, nil
}

// TableRoutes lists the routes of one table, of one protocol (0: all).
func (f *Kernel) TableRoutes(table, protocol int) ([]model.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallTableRoutes, ""); err != nil {
		return nil, fmt.Errorf("list routes of table %d: %w", table, err)
	}
	var out []model.Route
	for _, r := range f.routes {
		if int(r.Table) == table && (protocol == 0 || int(r.Protocol) == protocol) {
			out = append(out, r)
		}
	}
	model.SortRoutes(out)
	return out, nil
}

// RoutesWithKeys lists the routes of one table, of every protocol, whose
// keys are in keys.
func (f *Kernel) RoutesWithKeys(table int, keys map[model.RouteKey]bool) ([]model.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallRoutesWithKeys, ""); err != nil {
		return nil, fmt.Errorf("list routes of table %d: %w", table, err)
	}
	var out []model.Route
	for _, r := range f.routes {
		if int(r.Table) == table && keys[r.Key()] {
			out = append(out, r)
		}
	}
	model.SortRoutes(out)
	return out, nil
}

// Rules lists the rules.
func (f *Kernel) Rules() ([]model.Rule, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallRules, ""); err != nil {
		return nil, fmt.Errorf("list rules: %w", err)
	}
	out := append([]model.Rule(nil), f.rules...)
	model.SortRules(out)
	return out, nil
}

// FouPorts lists the open FoU ports.
func (f *Kernel) FouPorts() ([]model.FouPort, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallFouPorts, ""); err != nil {
		return nil, fmt.Errorf("list fou ports: %w", err)
	}
	var out []model.FouPort
	for _, p := range f.fou {
		out = append(out, p)
	}
	model.SortFou(out)
	return out, nil
}

func (f *Kernel) need(name string) (*model.Link, error) {
	l, ok := f.links[name]
	if !ok {
		return nil, fmt.Errorf("link %s: %w", name, kernel.ErrNotFound)
	}
	return l, nil
}

// AddLink creates a link (and a veth's peer), marked, down.
func (f *Kernel) AddLink(l *model.Link) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.write(CallAddLink, l.Name); err != nil {
		return fmt.Errorf("add link %s: %w", l.Name, err)
	}
	if _, ok := f.links[l.Name]; ok {
		return fmt.Errorf("add link %s: %w", l.Name, syscall.EEXIST)
	}
	var deps []string
	if l.VXLAN != nil && l.VXLAN.Dev != "" {
		deps = append(deps, l.VXLAN.Dev)
	}
	if p := l.Parent(); p != "" {
		deps = append(deps, p)
	}
	for _, d := range deps {
		if _, err := f.need(d); err != nil {
			return fmt.Errorf("add link %s: %w", l.Name, err)
		}
	}
	if l.Kind == model.KindWireGuard && f.NoWireGuardModule {
		return fmt.Errorf("add link %s: kind %s: %w", l.Name, l.Kind, kernel.ErrUnsupported)
	}
	c := cloneLink(l)
	c.Owned, c.Up, c.Master, c.Adopt, c.Origin = true, false, "", false, ""
	c.Lower = c.Parent()
	if c.MTU == 0 {
		c.MTU = f.createdMTU(c)
	}
	if c.Kind == model.KindWireGuard {
		// The device's configuration lives apart, as in the kernel: read
		// with WireGuardDevice, written with ConfigureWireGuard.
		c.WireGuard = nil
		f.wg[c.Name] = newWGDevice(kernel.WireGuardKernel, f.nextIndex+1)
	}
	f.nextIndex++
	c.Index = f.nextIndex
	if c.Veth != nil && c.Veth.PeerNetNS == "" {
		c.Veth.PeerNSID = -1
	}
	if l.Kind == model.KindVeth && l.Veth.PeerNetNS == "" {
		if _, ok := f.links[l.Veth.Peer]; ok {
			return fmt.Errorf("add link %s: peer %s: %w", l.Name, l.Veth.Peer, syscall.EEXIST)
		}
		f.nextIndex++
		// The peer starts at the kernel's default for a veth (ours asks
		// for it: kernel.Netlink.AddLink), whatever this end's MTU.
		f.links[l.Veth.Peer] = &model.Link{Name: l.Veth.Peer, Kind: model.KindVeth, MTU: 1500, Index: f.nextIndex, Veth: &model.Veth{Peer: l.Name, PeerNSID: -1}}
		f.newLinkSysctls(f.nextIndex)
	}
	f.links[c.Name] = c
	f.newLinkSysctls(c.Index)
	f.logged(CallAddLink, l.Name)
	// The marker is a second write, as Netlink's: it can fail alone.
	if err := f.injected(CallSetLinkAlias, l.Name); err != nil {
		c.Owned = false
		return fmt.Errorf("add link %s: %w: %w", l.Name, kernel.ErrUnmarked, err)
	}
	return nil
}

// createdMTU is the MTU the kernel gives a link made without one: a
// macvlan, ipvlan or vlan takes its parent's (macvlan_common_newlink,
// ipvlan_link_new, vlan_newlink), a vxlan on a device the device's less
// the encapsulation, 50 bytes over IPv4 and 70 over IPv6
// (vxlan_config_apply); any other link 1500.
func (f *Kernel) createdMTU(l *model.Link) int {
	if p := f.links[l.Lower]; p != nil && (l.Kind == model.KindMACVlan || l.Kind == model.KindIPVlan || l.Kind == model.KindVLAN) {
		return p.MTU
	}
	if v := l.VXLAN; v != nil && v.Dev != "" {
		if d := f.links[v.Dev]; d != nil {
			headroom := 50
			if v.Remote.Is6() || v.Local.Is6() {
				headroom = 70
			}
			return max(d.MTU-headroom, 68)
		}
	}
	return 1500
}

// DeleteLink deletes a link with its addresses, routes and veth peer, and
// releases its slaves.
func (f *Kernel) DeleteLink(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.write(CallDeleteLink, name); err != nil {
		return fmt.Errorf("delete link %s: %w", name, err)
	}
	l, err := f.need(name)
	if err != nil {
		return fmt.Errorf("delete link: %w", err)
	}
	f.drop(name)
	if l.Veth != nil && l.Veth.Peer != "" {
		f.drop(l.Veth.Peer)
	}
	f.logged(CallDeleteLink, name)
	return nil
}

func (f *Kernel) drop(name string) {
	delete(f.links, name)
	delete(f.wg, name)
	delete(f.bondMTU, name)
	// Links that sit on it go with it: ipvlans on their parent, vxlans
	// on their device.
	for n, l := range f.links {
		if l.Lower == name || (l.VXLAN != nil && l.VXLAN.Dev == name) {
			f.drop(n)
		}
	}
	for k := range f.addrs {
		if k.Link == name {
			f.dropAddr(k)
		}
	}
	for k, r := range f.routes {
		if r.Dev == name {
			delete(f.routes, k)
		}
	}
	for _, l := range f.links {
		if l.Master == name {
			l.Master = ""
		}
	}
}

// dropRoutes deletes the routes through link name (only IPv4 ones if v4).
// Called locked.
func (f *Kernel) dropRoutes(name string, v4 bool) {
	for k, r := range f.routes {
		if slices.Contains(r.Devs(), name) && (!v4 || !r.IsIPv6()) {
			delete(f.routes, k)
		}
	}
}

func (f *Kernel) setLink(c Call, name string, set func(l *model.Link) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.write(c, name); err != nil {
		return err
	}
	l, err := f.need(name)
	if err != nil {
		return fmt.Errorf("%s: %w", c, err)
	}
	if err := set(l); err != nil {
		return fmt.Errorf("%s %s: %w", c, name, err)
	}
	f.logged(c, name)
	return nil
}

// SetLinkMTU changes the MTU, and what follows it: an ipvlan takes its
// parent's MTU whenever it changes (ipvlan_device_event, NETDEV_CHANGEMTU),
// a macvlan or a vlan is lowered to it when above it (macvlan_device_event,
// vlan_device_event), and a bond's members take the bond's (bond_change_mtu).
// A macvlan or a vlan cannot go above its parent's MTU: a macvlan refuses
// with EINVAL (macvlan_change_mtu), a vlan with ERANGE (its max_mtu is the
// parent's); an ipvlan may (6.1).
func (f *Kernel) SetLinkMTU(name string, mtu int) error {
	return f.setLink(CallSetLinkMTU, name, func(l *model.Link) error {
		if p := f.links[l.Lower]; p != nil && mtu > p.MTU {
			switch l.Kind {
			case model.KindMACVlan:
				return syscall.EINVAL
			case model.KindVLAN:
				return syscall.ERANGE
			}
		}
		l.MTU = mtu
		f.ipv6MTU(l)
		for _, c := range f.links {
			if l.Kind == model.KindBond && c.Master == name {
				// bond_change_mtu: every member takes the bond's.
				c.MTU = mtu
			}
			if c.Lower != name {
				continue
			}
			switch {
			case c.Kind == model.KindIPVlan:
				c.MTU = mtu
			case (c.Kind == model.KindMACVlan || c.Kind == model.KindVLAN) && c.MTU > mtu:
				c.MTU = mtu
			}
		}
		return nil
	})
}

// PromoteSecondaries turns the link's promote_secondaries on (the fake
// keeps no secondaries: it records the write and the parameter).
func (f *Kernel) PromoteSecondaries(name string) error {
	return f.setLink(CallPromoteSecondaries, name, func(l *model.Link) error {
		key, _ := model.PerLinkSysctl(name, "ipv4.promote_secondaries")
		return f.setSysctl(key, "1")
	})
}

// ChangeLink writes a macvlan's mode, a bond's mode and miimon, or a
// tunnel's attributes, refusing what the kernel refuses: a macvlan into or
// out of passthru (EINVAL), a bond's mode while it has members (the bonding
// driver refuses it), a change to a flow-based tunnel or of whether an ipip
// has a remote (EINVAL).
func (f *Kernel) ChangeLink(want *model.Link) error {
	return f.setLink(CallChangeLink, want.Name, func(l *model.Link) error {
		switch {
		case l.MACVlan != nil && want.MACVlan != nil:
			if (l.MACVlan.Mode == model.MACVlanPassthru) != (want.MACVlan.Mode == model.MACVlanPassthru) {
				return syscall.EINVAL
			}
			l.MACVlan.Mode = want.MACVlan.Mode
		case l.Bond != nil && want.Bond != nil:
			if l.Bond.Mode != want.Bond.Mode {
				for _, o := range f.links {
					if o.Master == l.Name {
						return syscall.EPERM
					}
				}
			}
			if l.Up && l.Bond.Mode != want.Bond.Mode {
				// Only while down: kernel.ChangeLink sets the bond down
				// and up again, which takes its routes and IPv6
				// addresses.
				f.cycle(l.Name)
			}
			*l.Bond = *want.Bond
		case l.Tunnel != nil && want.Tunnel != nil:
			// ip_tunnel_changelink, ip6_tnl_changelink: a collect_md
			// device refuses every change; an ipip's remote cannot come
			// or go (point-to-point or not).
			if l.Tunnel.External || want.Tunnel.External ||
				l.Kind == model.KindIPIP && l.Tunnel.Remote.IsValid() != want.Tunnel.Remote.IsValid() {
				return syscall.EINVAL
			}
			t := *want.Tunnel
			if t.Encap != nil {
				e := *t.Encap
				t.Encap = &e
			}
			l.Tunnel = &t
		case l.VXLAN != nil && want.VXLAN != nil:
			// vxlan_changelink: an address of the other family is
			// refused (EOPNOTSUPP); the id, port and dev are not sent.
			h, w := l.VXLAN, want.VXLAN
			if (h.Remote.Is6() || h.Local.Is6()) != (w.Remote.Is6() || w.Local.Is6()) {
				return syscall.EOPNOTSUPP
			}
			v := *h
			v.Local, v.Remote, v.TTL, v.Learning = w.Local, w.Remote, w.TTL, w.Learning
			l.VXLAN = &v
		default:
			return syscall.EOPNOTSUPP
		}
		return nil
	})
}

// SetLinkUp sets the administrative state. A vlan cannot come up on a
// parent that is down (vlan_dev_open: ENETDOWN), and follows its parent:
// every vlan of a parent going down goes down, and every one comes up with
// it, even one set down by hand (vlan_device_event, NETDEV_DOWN and
// NETDEV_UP, without loose binding).
func (f *Kernel) SetLinkUp(name string, up bool) error {
	return f.setLink(CallSetLinkUp, name, func(l *model.Link) error {
		if up && l.Kind == model.KindVLAN {
			if p := f.links[l.Lower]; p != nil && !p.Up {
				return syscall.ENETDOWN
			}
		}
		if !up {
			f.down(l)
		} else if !l.Up {
			f.ipv6MTU(l)
		}
		l.Up = up
		for _, c := range f.links {
			if c.Lower != name || c.Kind != model.KindVLAN {
				continue
			}
			if up {
				c.Up = true
			} else {
				f.down(c)
			}
		}
		return nil
	})
}

// down sets a link down with what the kernel takes from it on the way
// (addrconf_ifdown, fib_disable_ip): its routes and, keep_addr_on_down
// being 0, its IPv6 addresses. Called locked.
func (f *Kernel) down(l *model.Link) {
	if l.Up {
		f.cycle(l.Name)
	}
	l.Up = false
}

// cycle is what a link loses going down, whether or not it stays up after:
// the routes through it and its IPv6 addresses. Called locked.
func (f *Kernel) cycle(name string) {
	f.dropRoutes(name, false)
	for k := range f.addrs {
		if k.Link == name && k.Prefix.Addr().Is6() {
			f.dropAddr(k)
		}
	}
}

// SetLinkMaster enslaves a link to a master, or releases it, with what the
// drivers do on the way:
//   - a vrf closes and opens a port that joins or leaves it (cycle_netdev):
//     it loses its routes and IPv6 addresses, and keeps its state;
//   - a bond takes a member only down, then opens it and gives it the
//     bond's MTU (bond_enslave); releasing one closes it and gives it back
//     the MTU it had when it joined (__bond_release_one).
func (f *Kernel) SetLinkMaster(name, master string) error {
	return f.setLink(CallSetLinkMaster, name, func(l *model.Link) error {
		var m *model.Link
		if master != "" {
			var err error
			if m, err = f.need(master); err != nil {
				return err
			}
		}
		if old := f.links[l.Master]; old != nil && old.Kind == model.KindBond && l.Master != master {
			f.down(l)
			if mtu, ok := f.bondMTU[name]; ok {
				l.MTU = mtu
				delete(f.bondMTU, name)
			}
		}
		if old := f.links[l.Master]; (old != nil && old.Kind == model.KindVRF || m != nil && m.Kind == model.KindVRF) && l.Master != master {
			f.cycle(name)
		}
		if m != nil && m.Kind == model.KindBond && l.Master != master {
			f.down(l)
			f.bondMTU[name] = l.MTU
			l.MTU, l.Up = m.MTU, true
		}
		l.Master = master
		return nil
	})
}

// SetLinkAlias writes the alias, with the marker when owned.
func (f *Kernel) SetLinkAlias(name, alias string, owned bool) error {
	return f.setLink(CallSetLinkAlias, name, func(l *model.Link) error {
		l.Alias, l.Owned = alias, owned
		return nil
	})
}

// AddressProtocols reports RecordsAddressProtocols.
func (f *Kernel) AddressProtocols() bool { return f.RecordsAddressProtocols }

// ReplaceAddress adds or changes an address. With RecordsAddressProtocols
// it takes protocol, added or replaced, as the kernel does (6.18).
func (f *Kernel) ReplaceAddress(a *model.Address, protocol int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := a.Key().String()
	if err := f.write(CallReplaceAddress, id); err != nil {
		return fmt.Errorf("add address %s: %w", id, err)
	}
	if _, err := f.need(a.Link); err != nil {
		return fmt.Errorf("add address %s: %w", id, err)
	}
	c := *a
	c.Owned, c.Origin, c.Protocol = false, "", 0
	if f.RecordsAddressProtocols {
		c.Protocol = protocol
	}
	if old, ok := f.addrs[a.Key()]; ok {
		c.Secondary = old.Secondary
	} else if a.Prefix.Addr().Is4() {
		// A second IPv4 address of a subnet on a link is its secondary.
		for _, o := range f.addrs {
			if o.Link == a.Link && o.Prefix.Addr().Is4() && o.Subnet() == c.Subnet() {
				c.Secondary = true
			}
		}
	}
	f.putAddr(c)
	f.logged(CallReplaceAddress, id)
	return nil
}

// putAddr stores an address, at the end of its link's list when new.
// Called locked.
func (f *Kernel) putAddr(a model.Address) {
	k := a.Key()
	if _, ok := f.addrs[k]; !ok {
		f.addrNext++
		f.addrSeq[k] = f.addrNext
	}
	f.addrs[k] = a
}

// dropAddr forgets an address. Called locked.
func (f *Kernel) dropAddr(k model.AddressKey) {
	delete(f.addrs, k)
	delete(f.addrSeq, k)
}

// dropSecondaries is what deleting the primary IPv4 address p does to the
// secondaries of its subnet (__inet_del_ifa): with promote_secondaries on
// the link or on "all", the first secondary becomes the primary; without,
// every one goes with p. Called locked.
func (f *Kernel) dropSecondaries(p model.Address) {
	var secs []model.AddressKey
	for k, a := range f.addrs {
		if k.Link == p.Link && a.Secondary && a.Prefix.Addr().Is4() && a.Subnet() == p.Subnet() {
			secs = append(secs, k)
		}
	}
	if len(secs) == 0 {
		return
	}
	sort.Slice(secs, func(i, j int) bool { return f.addrSeq[secs[i]] < f.addrSeq[secs[j]] })
	key, _ := model.PerLinkSysctl(p.Link, "ipv4.promote_secondaries")
	own, _ := f.sysctl(key)
	all, _ := f.sysctl("net.ipv4.conf.all.promote_secondaries")
	if own == "1" || all == "1" {
		a := f.addrs[secs[0]]
		a.Secondary = false
		f.addrs[secs[0]] = a
		return
	}
	for _, k := range secs {
		f.dropAddr(k)
	}
}

// DeleteAddress removes an address.
func (f *Kernel) DeleteAddress(a *model.Address) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := a.Key().String()
	if err := f.write(CallDeleteAddress, id); err != nil {
		return fmt.Errorf("delete address %s: %w", id, err)
	}
	if _, ok := f.addrs[a.Key()]; !ok {
		return fmt.Errorf("delete address %s: %w", id, syscall.EADDRNOTAVAIL)
	}
	old := f.addrs[a.Key()]
	f.dropAddr(a.Key())
	if a.Prefix.Addr().Is4() {
		if !old.Secondary {
			f.dropSecondaries(old)
		}
		last := true
		for k := range f.addrs {
			if k.Link == a.Link && k.Prefix.Addr().Is4() {
				last = false
			}
		}
		if last {
			// fib_disable_ip: the link's last IPv4 address takes every
			// IPv4 route through the link with it.
			f.dropRoutes(a.Link, true)
		}
	}
	f.logged(CallDeleteAddress, id)
	return nil
}

func (f *Kernel) putRoute(call Call, r *model.Route, protocol int, excl bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.Key().String()
	if err := f.write(call, id); err != nil {
		return fmt.Errorf("%s %s: %w", call, id, err)
	}
	c := *r
	c.Protocol, c.Origin = uint8(protocol), model.Origin{}
	c.NextHops = slices.Clone(r.NextHops)
	normalizeMetric(&c)
	if _, ok := f.routes[c.Key()]; ok && excl {
		return fmt.Errorf("add route %s: %w", id, syscall.EEXIST)
	}
	for _, d := range r.Devs() {
		if _, err := f.need(d); err != nil {
			return fmt.Errorf("add route %s: %w", id, err)
		}
	}
	f.routes[c.Key()] = c
	f.logged(call, id)
	return nil
}

// normalizeMetric stores an IPv6 route's metric 0 as 1024, as the kernel
// does (ip6_route_info_create: IP6_RT_PRIO_USER).
func normalizeMetric(r *model.Route) {
	if r.IsIPv6() && r.Metric == 0 {
		r.Metric = model.IPv6DefaultMetric
	}
}

// addRoute adds a route; EEXIST when its key exists.
func (f *Kernel) addRoute(r *model.Route, protocol int) error {
	return f.putRoute(CallAddRoute, r, protocol, true)
}

// replaceRoute adds or replaces a route.
func (f *Kernel) replaceRoute(r *model.Route, protocol int) error {
	return f.putRoute(CallReplaceRoute, r, protocol, false)
}

// deleteRoute deletes the route with r's key.
func (f *Kernel) deleteRoute(r *model.Route) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.Key().String()
	if err := f.write(CallDeleteRoute, id); err != nil {
		return fmt.Errorf("delete route %s: %w", id, err)
	}
	c := *r
	normalizeMetric(&c)
	if _, ok := f.routes[c.Key()]; !ok {
		return fmt.Errorf("delete route %s: %w", id, syscall.ESRCH)
	}
	delete(f.routes, c.Key())
	f.logged(CallDeleteRoute, id)
	return nil
}

// WriteRoutes makes the writes one by one; failures are injected with the
// method names "AddRoute", "ReplaceRoute" and "DeleteRoute".
func (f *Kernel) WriteRoutes(ws []kernel.RouteWrite, protocol int) []error {
	errs := make([]error, len(ws))
	for i, x := range ws {
		switch x.Action {
		case kernel.RouteAdd:
			errs[i] = f.addRoute(x.Route, protocol)
		case kernel.RouteReplace:
			errs[i] = f.replaceRoute(x.Route, protocol)
		case kernel.RouteDelete:
			errs[i] = f.deleteRoute(x.Route)
		}
	}
	return errs
}

// AddRule adds a rule; EEXIST when the same rule of the same protocol exists.
func (f *Kernel) AddRule(r *model.Rule, protocol int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.Key().String()
	if err := f.write(CallAddRule, id); err != nil {
		return fmt.Errorf("add rule %s: %w", id, err)
	}
	for _, h := range f.rules {
		if h.Key() == r.Key() && h.Protocol == protocol {
			return fmt.Errorf("add rule %s: %w", id, syscall.EEXIST)
		}
	}
	c := *r
	c.Protocol, c.Origin = protocol, ""
	f.rules = append(f.rules, c)
	f.logged(CallAddRule, id)
	return nil
}

// DeleteRule deletes the rule with r's key and protocol.
func (f *Kernel) DeleteRule(r *model.Rule) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := r.Key().String()
	if err := f.write(CallDeleteRule, id); err != nil {
		return fmt.Errorf("delete rule %s: %w", id, err)
	}
	for i, h := range f.rules {
		if h.Key() == r.Key() && h.Protocol == r.Protocol {
			f.rules = append(f.rules[:i], f.rules[i+1:]...)
			f.logged(CallDeleteRule, id)
			return nil
		}
	}
	return fmt.Errorf("delete rule %s: %w", id, syscall.ENOENT)
}

// AddFou opens a FoU port.
func (f *Kernel) AddFou(p *model.FouPort) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := p.Key().String()
	if err := f.write(CallAddFou, id); err != nil {
		return fmt.Errorf("add %s: %w", id, err)
	}
	if _, ok := f.fou[p.Key()]; ok {
		return fmt.Errorf("add %s: %w", id, syscall.EEXIST)
	}
	c := *p
	c.Owned, c.Origin = false, ""
	f.fou[p.Key()] = c
	f.logged(CallAddFou, id)
	return nil
}

// DeleteFou closes a FoU port.
func (f *Kernel) DeleteFou(p *model.FouPort) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := p.Key().String()
	if err := f.write(CallDeleteFou, id); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if _, ok := f.fou[p.Key()]; !ok {
		return fmt.Errorf("delete %s: %w", id, syscall.ENOENT)
	}
	delete(f.fou, p.Key())
	f.logged(CallDeleteFou, id)
	return nil
}

// Writes counts write attempts, failed ones included.
func (f *Kernel) Writes() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

// Close does nothing.
func (f *Kernel) Close() error { return nil }

// VethPeer returns nil: the fake holds one namespace, and a veth whose
// peer is elsewhere has no peer it can read (Remote stays nil).
func (f *Kernel) VethPeer(nsid, index int) (*model.RemotePeer, error) {
	return nil, nil
}
