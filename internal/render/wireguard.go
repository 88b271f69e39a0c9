package render

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// renderWireGuard writes a device as the file would declare it. The kernel
// never gives the private key's origin back: the public key is shown as a
// comment, and private-key-file must be added by hand.
func renderWireGuard(w *model.WireGuard) *yaml.Node {
	m := mapping()
	m.HeadComment = "private-key-file: not readable from the kernel; public-key " + w.PublicKey.String()
	if w.PublicKey.IsZero() {
		m.HeadComment = "no private key set"
	}
	if w.ListenPort != 0 {
		add(m, "listen-port", yscalar(strconv.Itoa(w.ListenPort)))
	}
	if w.FwMark != 0 {
		add(m, "fwmark", yscalar(fmt.Sprintf("%#x", w.FwMark)))
	}
	if w.Implementation == "userspace" || w.Userspace {
		add(m, "userspace", yscalar("true"))
	}
	if len(w.Peers) == 0 {
		return m
	}
	seq := sequence()
	for _, p := range w.Peers {
		pm := mapping()
		pub := yscalar(p.PublicKey.String())
		if p.PresharedKey.IsSet() {
			// On the peer's first line: a foot comment of the peer's
			// mapping would be written after the whole device, under
			// the link's next key.
			pub.LineComment = "preshared-key-file: a preshared key is set"
		}
		add(pm, "public-key", pub)
		ips := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, a := range p.AllowedIPs {
			ips.Content = append(ips.Content, yscalar(a.String()))
		}
		add(pm, "allowed-ips", ips)
		if p.Keepalive != 0 {
			add(pm, "persistent-keepalive", yscalar(p.Keepalive.String()))
		}
		if p.Endpoint.IsValid() {
			add(pm, "endpoints", &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle, Content: []*yaml.Node{yscalar(p.Endpoint.String())}})
		}
		seq.Content = append(seq.Content, pm)
	}
	add(m, "peers", seq)
	return m
}
