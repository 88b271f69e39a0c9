package apply

import (
	"errors"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// addLink creates a link. A wireguard link that allows userspace falls back
// to wireguard-go when the kernel has no WireGuard module, as wg-quick does;
// the tun device it makes is then marked as ours like any created link.
func addLink(k kernel.Writer, l *model.Link) error {
	err := k.AddLink(l)
	if err == nil || l.Kind != model.KindWireGuard || l.WireGuard == nil || !l.WireGuard.Userspace || !errors.Is(err, kernel.ErrUnsupported) {
		return err
	}
	wg, ok := k.(kernel.WireGuard)
	if !ok {
		return err
	}
	if err := wg.StartUserspaceWireGuard(l.Name); err != nil {
		return err
	}
	if err := k.SetLinkAlias(l.Name, l.Alias, true); err != nil {
		return err
	}
	if l.MTU != 0 {
		return k.SetLinkMTU(l.Name, l.MTU)
	}
	return nil
}

func wireguardOf(k kernel.Writer, op diff.Op) (kernel.WireGuard, error) {
	wg, ok := k.(kernel.WireGuard)
	if !ok {
		return nil, fmt.Errorf("%s %s %s: this kernel interface cannot configure WireGuard", op.Action, op.Kind, op.ID)
	}
	return wg, nil
}

// runWGDevice writes a device's key, port and mark.
func runWGDevice(k kernel.Writer, op diff.Op) error {
	wg, err := wireguardOf(k, op)
	if err != nil {
		return err
	}
	w := op.WireGuard.Device
	cfg := &kernel.WireGuardConfig{}
	all := op.Action == diff.Create
	if all || hasChange(op, "public-key") {
		key := w.PrivateKey
		cfg.PrivateKey = &key
	}
	if (all && w.ListenPort != 0) || hasChange(op, "listen-port") {
		port := w.ListenPort
		cfg.ListenPort = &port
	}
	if all || hasChange(op, "fwmark") {
		m := w.FwMark
		cfg.FwMark = &m
	}
	return wg.ConfigureWireGuard(op.WireGuard.Link, cfg)
}

func hasChange(op diff.Op, field string) bool {
	for _, c := range op.Changes {
		if c.Field == field {
			return true
		}
	}
	return false
}

// peerPatch turns one peer operation into a wgctrl patch: only what changes.
func peerPatch(op diff.Op) kernel.PeerPatch {
	p := op.WireGuard.Peer
	pp := kernel.PeerPatch{PublicKey: p.PublicKey}
	switch op.Action {
	case diff.Delete:
		pp.Remove = true
	case diff.Create:
		ka := p.Keepalive
		pp.Keepalive, pp.Endpoint = &ka, p.Endpoint
		pp.ReplaceAllowedIPs, pp.AllowedIPs = true, p.AllowedIPs
		if p.PresharedKey.IsSet() {
			psk := p.PresharedKey
			pp.PresharedKey = &psk
		}
	case diff.Update:
		pp.UpdateOnly = true
		for _, c := range op.Changes {
			switch c.Field {
			case "allowed-ips":
				pp.ReplaceAllowedIPs, pp.AllowedIPs = true, p.AllowedIPs
			case "persistent-keepalive":
				ka := p.Keepalive
				pp.Keepalive = &ka
			case "preshared-key":
				psk := p.PresharedKey // a zero Secret clears it
				pp.PresharedKey = &psk
			case "endpoint":
				pp.Endpoint = p.Endpoint
			}
		}
	}
	return pp
}

// runWGPeers applies consecutive peer operations of one device in one
// ConfigureDevice call. If the call fails, each operation is retried alone,
// so that failures are reported per peer and the others still happen.
func runWGPeers(k kernel.Writer, ops []diff.Op, res *Result) {
	wg, err := wireguardOf(k, ops[0])
	if err != nil {
		for _, op := range ops {
			res.Failed = append(res.Failed, Failure{op, err})
		}
		return
	}
	link := ops[0].WireGuard.Link
	cfg := &kernel.WireGuardConfig{Peers: make([]kernel.PeerPatch, len(ops))}
	for i, op := range ops {
		cfg.Peers[i] = peerPatch(op)
	}
	if err := wg.ConfigureWireGuard(link, cfg); err == nil {
		res.Done = append(res.Done, ops...)
		return
	} else if len(ops) == 1 || errors.Is(err, kernel.ErrNotFound) {
		for _, op := range ops {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, err)})
		}
		return
	}
	for _, op := range ops {
		err := wg.ConfigureWireGuard(link, &kernel.WireGuardConfig{Peers: []kernel.PeerPatch{peerPatch(op)}})
		if err != nil {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.ID, err)})
			continue
		}
		res.Done = append(res.Done, op)
	}
}

// peerBatchEnd returns the end of the run of peer operations on the same
// device that starts at i.
func peerBatchEnd(ops []diff.Op, i int) int {
	j := i + 1
	for j < len(ops) && ops[j].Kind == diff.KindWGPeer && ops[j].WireGuard.Link == ops[i].WireGuard.Link {
		j++
	}
	return j
}
