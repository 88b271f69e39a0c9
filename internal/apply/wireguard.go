package apply

import (
	"errors"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// runWGDevice writes a device's key, port and mark: those the op names.
func runWGDevice(k kernel.Interface, op diff.Op) error {
	cfg := &kernel.WireGuardConfig{}
	op.WireGuard.DeviceFields.Write(deviceConfig{cfg, op.WireGuard.Device})
	return k.ConfigureWireGuard(op.WireGuard.Link, cfg)
}

// deviceConfig fills a device patch from the desired device.
type deviceConfig struct {
	cfg *kernel.WireGuardConfig
	w   *model.WireGuard
}

var _ diff.WireGuardWriter = deviceConfig{}

func (d deviceConfig) PrivateKey() { key := d.w.PrivateKey; d.cfg.PrivateKey = &key }
func (d deviceConfig) ListenPort() { port := d.w.ListenPort; d.cfg.ListenPort = &port }
func (d deviceConfig) FwMark()     { m := d.w.FwMark; d.cfg.FwMark = &m }

// peerPatch turns one peer operation into a wgctrl patch: only what the op
// writes.
func peerPatch(op *diff.Op) kernel.PeerPatch {
	var pp kernel.PeerPatch
	(&peerConfig{}).fill(&pp, op)
	return pp
}

// peerPatches fills dst with the patches of ops (as many), through one
// writer: a device configured from empty patches ten thousand peers, and a
// writer or a patch of their own made each one escape (two allocations a
// peer).
func peerPatches(dst []kernel.PeerPatch, ops []diff.Op) {
	c := &peerConfig{}
	for i := range ops {
		c.fill(&dst[i], &ops[i])
	}
}

// peerConfig fills a peer patch from the desired peer.
type peerConfig struct {
	pp *kernel.PeerPatch
	p  *model.WireGuardPeer
}

var _ diff.PeerWriter = (*peerConfig)(nil)

// fill makes pp the patch of op.
func (c *peerConfig) fill(pp *kernel.PeerPatch, op *diff.Op) {
	p := op.WireGuard.Peer
	*pp = kernel.PeerPatch{PublicKey: p.PublicKey}
	switch op.Action {
	case diff.Delete:
		pp.Remove = true
		return
	case diff.Update:
		pp.UpdateOnly = true
	}
	c.pp, c.p = pp, p
	op.WireGuard.PeerFields.Write(c)
}

func (c *peerConfig) AllowedIPs() { c.pp.ReplaceAllowedIPs, c.pp.AllowedIPs = true, c.p.AllowedIPs }

// Keepalive points at the desired peer's (read only, while the patch is
// sent): no copy of its own for each of ten thousand peers.
func (c *peerConfig) Keepalive() { c.pp.Keepalive = &c.p.Keepalive }

// PresharedKey writes the key; a zero Secret clears it.
func (c *peerConfig) PresharedKey() { psk := c.p.PresharedKey; c.pp.PresharedKey = &psk }

// Endpoint writes the endpoint (the kernel side writes it when valid).
func (c *peerConfig) Endpoint() { c.pp.Endpoint = c.p.Endpoint }

// runWGPeers applies consecutive peer operations of one device in one
// ConfigureDevice call. If the call fails, each operation is retried alone,
// so that failures are reported per peer and the others still happen.
func runWGPeers(k kernel.Interface, ops []diff.Op, res *Result) {
	link := ops[0].WireGuard.Link
	cfg := &kernel.WireGuardConfig{Peers: make([]kernel.PeerPatch, len(ops))}
	peerPatches(cfg.Peers, ops)
	if err := k.ConfigureWireGuard(link, cfg); err == nil {
		for i := range ops {
			res.Done = append(res.Done, &ops[i])
		}
		return
	} else if len(ops) == 1 || errors.Is(err, kernel.ErrNotFound) {
		for _, op := range ops {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.Name(), err)})
		}
		return
	}
	for i, op := range ops {
		err := k.ConfigureWireGuard(link, &kernel.WireGuardConfig{Peers: []kernel.PeerPatch{peerPatch(&op)}})
		if err != nil {
			res.Failed = append(res.Failed, Failure{op, fmt.Errorf("%s %s %s: %w", op.Action, op.Kind, op.Name(), err)})
			continue
		}
		res.Done = append(res.Done, &ops[i])
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
