package render

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// renderWireGuard writes a device as the file would declare it. The kernel
// never gives the private key's origin back: the device's public key says
// "keep the key it holds", which loads and plans nothing; private-key-file
// replaces it to set the key (or to make the device anew).
func renderWireGuard(w *model.WireGuard) *yaml.Node {
	m := mapping()
	if w.PublicKey.IsZero() {
		m.HeadComment = "no private key set: give private-key-file"
	} else {
		pub := yscalar(w.PublicKey.String())
		pub.LineComment = "the key the device holds, kept; private-key-file sets one"
		add(m, "public-key", pub)
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
		add(pm, "public-key", yscalar(p.PublicKey.String()))
		if p.PresharedKey.IsSet() {
			// The kernel gives the key, never its file: the peer keeps
			// the one it has.
			add(pm, "keep-preshared-key", yscalar("true"))
		}
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
