package model

// DefaultProtocol is the route and rule protocol number netreconcile stamps on
// what it creates. It is unassigned in iproute2's rt_protos and in the IANA-like
// list distributions ship (0-4 kernel, 8-19 classic daemons, 42 babel, 99
// openr, 186-192 routing suites), so a foreign daemon is unlikely to use it.
const DefaultProtocol = 245

// State is one host's network state, desired or actual.
type State struct {
	// Protocol is the ownership marker for routes and rules.
	Protocol int
	Links    map[string]*Link
	// Addresses, routes, rules and FoU ports are kept sorted by Key.
	Addresses []Address
	// AddressProtocols (actual) says the kernel records addresses'
	// protocols (IFA_PROTO, Linux 6.3): then an address of ours
	// (Address.Protocol) on a link netreconcile does not own is pruned
	// when it leaves the file.
	AddressProtocols bool
	Routes           []Route
	Rules            []Rule
	FouPorts         []FouPort
	// NFTables are the nftables tables netreconcile owns, sorted by key.
	NFTables []NftTable
	// Pools are the IPAM pools of the configuration, sorted by name, and PoolAddresses the
	// addresses links take from them (desired only; see pool.go).
	Pools         []Pool
	PoolAddresses []PoolAddress
	// MaxDisruption (desired only) is settings.max-disruption, one of
	// DisruptionNames, or "" for none: the service holds the changes that
	// disrupt more until an apply by hand.
	MaxDisruption string
	// Sysctls are the kernel parameters under net., sorted by key: in a
	// desired state those the file declares; in an actual one those the
	// file declares, the ledger owns, and the "default" keys new links
	// take their values from (see sysctl.go).
	Sysctls []Sysctl
}

// DisruptionNames are the levels of what an operation disrupts, least
// first (package diff's Disruption): the words of settings.max-disruption
// and of --max-disruption.
var DisruptionNames = []string{"in-place", "table-replaced", "readded", "link-flapped", "link-recreated"}

// NewState returns an empty state with the default protocol.
func NewState() *State {
	return &State{Protocol: DefaultProtocol, Links: map[string]*Link{}}
}

// Objects counts the objects a state declares: links, addresses, routes,
// rules, FoU ports, sysctls, WireGuard peers, and nftables tables with their sets,
// chains and rules (set elements are not counted: they are data).
func (s *State) Objects() int {
	n := len(s.Links) + len(s.Addresses) + len(s.Routes) + len(s.Rules) + len(s.FouPorts) + len(s.Sysctls)
	for _, l := range s.Links {
		if l.WireGuard != nil {
			n += len(l.WireGuard.Peers)
		}
	}
	for _, t := range s.NFTables {
		n += 1 + len(t.Sets) + len(t.Chains)
		for _, c := range t.Chains {
			n += len(c.Rules)
		}
	}
	return n
}

// Owned keeps what netreconcile owns: marked links and their addresses,
// addresses of our protocol, routes and rules of our protocol, FoU ports and
// sysctls in the ledger.
func (st *State) Owned() *State {
	out := NewState()
	out.Protocol = st.Protocol
	for n, l := range st.Links {
		if l.Owned {
			out.Links[n] = l
		}
	}
	for _, a := range st.Addresses {
		if st.OwnsAddress(&a) {
			out.Addresses = append(out.Addresses, a)
		}
	}
	for _, r := range st.Routes {
		if int(r.Protocol) == st.Protocol {
			out.Routes = append(out.Routes, r)
		}
	}
	for _, r := range st.Rules {
		if r.Protocol == st.Protocol {
			out.Rules = append(out.Rules, r)
		}
	}
	for _, t := range st.NFTables {
		if t.Owned {
			out.NFTables = append(out.NFTables, t)
		}
	}
	for _, f := range st.FouPorts {
		if f.Owned {
			out.FouPorts = append(out.FouPorts, f)
		}
	}
	for _, s := range st.Sysctls {
		if s.Owned {
			out.Sysctls = append(out.Sysctls, s)
		}
	}
	return out
}

// OwnsAddress says whether a is netreconcile's: on a link it owns, or on
// another link (lo, eth0) with its protocol, which the kernel records from
// Linux 6.3. IPv6 link-local addresses are the kernel's, made on every
// link, unless they carry netreconcile's protocol: one the file declared
// (the kernel's own carries kernel_ll, 3).
func (st *State) OwnsAddress(a *Address) bool {
	if IsLinkLocal6(a) {
		return st.Protocol != 0 && a.Protocol == st.Protocol
	}
	return a.Owned || a.Protocol == st.Protocol
}

// IsLinkLocal6 says whether a is an IPv6 link-local address: the kernel's,
// unless its protocol says otherwise (State.OwnsAddress).
func IsLinkLocal6(a *Address) bool {
	return a.Prefix.Addr().Is6() && a.Prefix.Addr().IsLinkLocalUnicast()
}

// Foreign keeps what Owned leaves out, but for sysctls: the links without
// the marker and the addresses, routes, rules, nftables tables and FoU
// ports that are not netreconcile's (what show --all prints as comments).
// Sysctls are left out: the actual state holds only those the ledger owns
// and those the file declares, whose values a file may keep.
func (st *State) Foreign() *State {
	out := NewState()
	out.Protocol = st.Protocol
	for n, l := range st.Links {
		if !l.Owned {
			out.Links[n] = l
		}
	}
	for _, a := range st.Addresses {
		if !st.OwnsAddress(&a) {
			out.Addresses = append(out.Addresses, a)
		}
	}
	for _, r := range st.Routes {
		if int(r.Protocol) != st.Protocol {
			out.Routes = append(out.Routes, r)
		}
	}
	for _, r := range st.Rules {
		if r.Protocol != st.Protocol {
			out.Rules = append(out.Rules, r)
		}
	}
	for _, t := range st.NFTables {
		if !t.Owned {
			out.NFTables = append(out.NFTables, t)
		}
	}
	for _, f := range st.FouPorts {
		if !f.Owned {
			out.FouPorts = append(out.FouPorts, f)
		}
	}
	return out
}
