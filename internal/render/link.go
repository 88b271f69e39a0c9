package render

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// renderLink renders a link of st. A bond's member is shown without its
// MTU: the kernel gives it the bond's, and a file may not declare one.
func renderLink(st *model.State, l *model.Link) *yaml.Node {
	m := mapping()
	add(m, "kind", yscalar(l.Kind))
	if master := st.Links[l.Master]; l.MTU != 0 && (master == nil || master.Kind != model.KindBond) {
		add(m, "mtu", yscalar(strconv.Itoa(l.MTU)))
	}
	add(m, "state", yscalar(map[bool]string{true: "up", false: "down"}[l.Up]))
	if l.Master != "" {
		add(m, "master", yscalar(l.Master))
	}
	if l.Alias != "" {
		add(m, "alias", yscalar(l.Alias))
	}
	switch {
	case l.Veth != nil && l.Veth.Peer != "":
		v := flow()
		add(v, "peer", yscalar(l.Veth.Peer))
		if l.Veth.PeerNetNS != "" {
			add(v, "peer-netns", yscalar(l.Veth.PeerNetNS))
		}
		add(m, "veth", v)
	case l.Veth != nil && l.Veth.Remote != nil && l.Veth.Remote.Unreadable == "" && l.Veth.Remote.Name != "":
		// The peer is in another namespace: the kernel names it by
		// netnsid and ifindex, the reader by the namespace's name.
		v := flow()
		add(v, "peer", yscalar(l.Veth.Remote.Name))
		add(v, "peer-netns", yscalar(l.Veth.Remote.NetNS))
		add(m, "veth", v)
	case l.Veth != nil && l.Veth.Remote != nil:
		m.HeadComment = "veth peer in another namespace: " + l.Veth.Remote.Unreadable
	case l.VXLAN != nil:
		x := l.VXLAN
		v := flow()
		add(v, "id", yscalar(strconv.Itoa(int(x.ID))))
		if x.Local.IsValid() {
			add(v, "local", yscalar(x.Local.String()))
		}
		if x.Remote.IsValid() {
			key := "remote"
			if x.Remote.IsMulticast() {
				key = "group"
			}
			add(v, key, yscalar(x.Remote.String()))
		}
		add(v, "port", yscalar(strconv.Itoa(int(x.Port))))
		if x.Dev != "" {
			add(v, "dev", yscalar(x.Dev))
		}
		if x.TTL != 0 {
			add(v, "ttl", yscalar(strconv.Itoa(int(x.TTL))))
		}
		add(v, "learning", yscalar(strconv.FormatBool(x.Learning)))
		add(m, "vxlan", v)
	case l.IPVlan != nil:
		v := flow()
		add(v, "parent", yscalar(l.IPVlan.Parent))
		add(v, "mode", yscalar(l.IPVlan.Mode))
		add(m, "ipvlan", v)
	case l.VLAN != nil:
		v := flow()
		add(v, "parent", yscalar(l.VLAN.Parent))
		add(v, "id", yscalar(strconv.Itoa(int(l.VLAN.ID))))
		add(v, "protocol", yscalar(l.VLAN.Protocol))
		add(m, "vlan", v)
	case l.MACVlan != nil:
		v := flow()
		add(v, "parent", yscalar(l.MACVlan.Parent))
		switch l.MACVlan.Mode {
		case model.MACVlanPrivate, model.MACVlanVEPA, model.MACVlanBridge, model.MACVlanPassthru:
			add(v, "mode", yscalar(l.MACVlan.Mode))
		default:
			// Someone else's macvlan in a mode the schema has no word
			// for (source, with its list of MACs): said, not written
			// as a key the file would refuse.
			v.LineComment = "mode " + l.MACVlan.Mode + " (not in the schema)"
		}
		add(m, "macvlan", v)
	case l.VRF != nil:
		v := flow()
		add(v, "table", yscalar(strconv.FormatUint(uint64(l.VRF.Table), 10)))
		add(m, "vrf", v)
	case l.Bond != nil:
		v := flow()
		add(v, "mode", yscalar(l.Bond.Mode))
		add(v, "miimon", yscalar(strconv.FormatUint(uint64(l.Bond.Miimon), 10)))
		add(m, "bond", v)
	case l.Tunnel != nil:
		t := l.Tunnel
		v := flow()
		if l.Kind == model.KindIP6Tnl {
			add(v, "mode", yscalar(t.Mode))
		}
		if t.External {
			add(v, "external", yscalar("true"))
		}
		if t.Local.IsValid() {
			add(v, "local", yscalar(t.Local.String()))
		}
		if t.Remote.IsValid() {
			add(v, "remote", yscalar(t.Remote.String()))
		}
		if t.TTL != 0 {
			add(v, "ttl", yscalar(strconv.Itoa(int(t.TTL))))
		}
		if e := t.Encap; e != nil {
			em := flow()
			add(em, "type", yscalar(e.Type))
			sport := "auto"
			if e.Sport != 0 {
				sport = strconv.Itoa(int(e.Sport))
			}
			add(em, "sport", yscalar(sport))
			add(em, "dport", yscalar(strconv.Itoa(int(e.Dport))))
			add(v, "encap", em)
		}
		add(m, l.Kind, v)
	case l.WireGuard != nil:
		add(m, "wireguard", renderWireGuard(l.WireGuard))
	}
	return m
}

// renderAddresses writes a link's addresses: the static ones, then those it
// takes from pools (nil when it has none).
func renderAddresses(addrs []model.Address, pools []model.PoolAddress, defs []model.Pool) *yaml.Node {
	if len(addrs) == 0 && len(pools) == 0 {
		return nil
	}
	seq := sequence()
	for _, a := range addrs {
		// The owner the kernel records (IFA_PROTO, Linux 6.3), as a
		// route's: a comment, not a key of the schema.
		proto := ""
		if a.Protocol != 0 {
			proto = fmt.Sprintf("proto %d", a.Protocol)
		}
		if a.Scope == model.ScopeUniverse && !a.Peer.IsValid() && !a.NoPrefixRoute {
			n := yscalar(a.Prefix.String())
			n.LineComment = proto
			seq.Content = append(seq.Content, n)
			continue
		}
		am := flow()
		am.LineComment = proto
		add(am, "address", yscalar(a.Prefix.String()))
		if a.Peer.IsValid() {
			add(am, "peer", yscalar(a.Peer.String()))
		}
		add(am, "scope", yscalar(model.ScopeName(a.Scope)))
		if a.NoPrefixRoute {
			add(am, "noprefixroute", yscalar("true"))
		}
		seq.Content = append(seq.Content, am)
	}
	for _, pa := range pools {
		seq.Content = append(seq.Content, renderPoolAddress(pa, defs))
	}
	return seq
}

// renderPoolAddress writes a link's pool entry: the pool, and what differs
// from an entry's defaults (a host's prefix length, scope global).
func renderPoolAddress(pa model.PoolAddress, defs []model.Pool) *yaml.Node {
	am := flow()
	add(am, "pool", yscalar(pa.Pool))
	dual := false
	for _, p := range defs {
		if p.Name == pa.Pool && len(p.Subnets) > 0 {
			dual = p.Subnets[0].IPv4.IsValid() && p.Subnets[0].IPv6.IsValid()
		}
	}
	bits := func(key string, n, host int) {
		if n != 0 && n != host {
			add(am, key, yscalar(strconv.Itoa(n)))
		}
	}
	switch {
	case dual:
		bits("ipv4-prefix-length", pa.IPv4Bits, 32)
		bits("ipv6-prefix-length", pa.IPv6Bits, 128)
	case pa.IPv4Bits != 0:
		bits("prefix-length", pa.IPv4Bits, 32)
	default:
		bits("prefix-length", pa.IPv6Bits, 128)
	}
	if pa.Scope != model.ScopeUniverse {
		add(am, "scope", yscalar(model.ScopeName(pa.Scope)))
	}
	if pa.NoPrefixRoute {
		add(am, "noprefixroute", yscalar("true"))
	}
	return am
}
