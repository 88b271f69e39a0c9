package kerneltest

import (
	"fmt"
	"sort"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Dump renders the kernel's state one object a line, in the words of
// ip(8), nft(8) and wg(8), sorted within each kind, for tests to compare
// with a want:
//
//	link br0 bridge mtu 1500 up owned alias "lab"
//	address 10.0.0.1/24 dev br0 scope link
//	route 10.1.0.0/24 table 100 via 10.0.0.254 dev br0 proto 245
//	rule priority 1000 from 10.0.0.0/24 lookup 100 proto 245
//	fou port 5555 ipproto 4
//	sysctl net.ipv4.ip_forward = 1   (only parameters a fresh kernel has otherwise)
//	nft table inet t handle 3
//	nft set inet t s { type ipv4_addr; flags interval }
//	nft element inet t s 10.0.0.0/8
//	nft chain inet t in { type filter hook input priority 0; policy accept }
//	nft rule inet t in handle 4: tcp dport 22 accept
//	wireguard wg0 public-key K listen-port 51820 fwmark 0x20
//	peer wg0 K allowed-ips 10.0.0.0/24 endpoint 192.0.2.1:51820 keepalive 25s
func (f *Kernel) Dump() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	add := func(lines []string) {
		sort.Strings(lines)
		out = append(out, lines...)
	}
	var ls []string
	for _, n := range sortedNames(f.links) {
		ls = append(ls, "link "+linkLine(f.links[n]))
	}
	add(ls)
	var as []string
	for _, a := range f.addrs {
		as = append(as, "address "+a.String())
	}
	add(as)
	var rs []string
	for _, r := range f.routes {
		rs = append(rs, fmt.Sprintf("route %s proto %d", r.String(), r.Protocol))
	}
	add(rs)
	var us []string
	for _, r := range f.rules {
		us = append(us, fmt.Sprintf("rule %s proto %d", r.String(), r.Protocol))
	}
	add(us)
	var fs []string
	for _, p := range f.fou {
		fs = append(fs, "fou "+p.String())
	}
	add(fs)
	add(f.sysctlLines())
	for _, k := range sortedNftKeys(f.nft) {
		out = append(out, nftLines(&f.nft[k].t)...)
	}
	var ws []string
	for n, d := range f.wg {
		ws = append(ws, wgLines(n, d)...)
	}
	add(ws)
	return strings.Join(out, "\n") + "\n"
}

func linkLine(l *model.Link) string {
	s := fmt.Sprintf("%s %s mtu %d", l.Name, l.Kind, l.MTU)
	if l.Up {
		s += " up"
	} else {
		s += " down"
	}
	if l.Owned {
		s += " owned"
	}
	if l.Master != "" {
		s += " master " + l.Master
	}
	if l.Alias != "" {
		s += fmt.Sprintf(" alias %q", l.Alias)
	}
	switch {
	case l.Veth != nil:
		s += " peer " + l.Veth.Peer
	case l.VXLAN != nil:
		s += fmt.Sprintf(" vxlan %+v", *l.VXLAN)
	case l.IPVlan != nil:
		s += fmt.Sprintf(" ipvlan %+v", *l.IPVlan)
	case l.VLAN != nil:
		s += fmt.Sprintf(" vlan %+v", *l.VLAN)
	case l.MACVlan != nil:
		s += fmt.Sprintf(" macvlan %+v", *l.MACVlan)
	case l.VRF != nil:
		s += fmt.Sprintf(" vrf %+v", *l.VRF)
	case l.Bond != nil:
		s += fmt.Sprintf(" bond %+v", *l.Bond)
	case l.Tunnel != nil:
		t := *l.Tunnel
		s += fmt.Sprintf(" tunnel %+v", t)
		if t.Encap != nil {
			s += fmt.Sprintf(" encap %+v", *t.Encap)
		}
	}
	return s
}

func nftLines(t *model.NftTable) []string {
	k := t.Key().String()
	head := fmt.Sprintf("nft table %s handle %d", k, t.Handle)
	if t.Dormant {
		head += " dormant"
	}
	out := []string{head}
	for _, s := range t.Sets {
		out = append(out, fmt.Sprintf("nft set %s %s { %s }", k, s.Name, s.Spec()))
		for _, e := range s.Elems {
			out = append(out, fmt.Sprintf("nft element %s %s %s", k, s.Name, model.FormatNftElem(s.Type, s.Interval, e)))
		}
	}
	for _, c := range t.Chains {
		out = append(out, fmt.Sprintf("nft chain %s %s { %s }", k, c.Name, c.Spec()))
		for _, r := range c.Rules {
			out = append(out, fmt.Sprintf("nft rule %s %s handle %d: %s", k, c.Name, r.Handle, r.Label()))
		}
	}
	return out
}

func wgLines(name string, d *wgDevice) []string {
	w := d.d
	s := fmt.Sprintf("wireguard %s %s public-key %s listen-port %d", name, w.Implementation, w.PublicKey, w.ListenPort)
	if w.FwMark != 0 {
		s += fmt.Sprintf(" fwmark %#x", w.FwMark)
	}
	out := []string{s}
	for _, p := range w.Peers {
		l := fmt.Sprintf("peer %s %s", name, p.PublicKey)
		if p.PresharedKey.IsSet() {
			l += " preshared-key " + model.SecretMarker
		}
		if len(p.AllowedIPs) > 0 {
			var ips []string
			for _, a := range p.AllowedIPs {
				ips = append(ips, a.String())
			}
			l += " allowed-ips " + strings.Join(ips, ",")
		}
		if p.Endpoint.IsValid() {
			l += " endpoint " + p.Endpoint.String()
		}
		if p.Keepalive != 0 {
			l += " keepalive " + p.Keepalive.String()
		}
		out = append(out, l)
	}
	return out
}
