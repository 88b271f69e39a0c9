package kerneltest

import (
	"fmt"
	"net/netip"
	"slices"
	"syscall"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// wgDevice is a WireGuard device's configuration.
type wgDevice struct {
	d model.WireGuard
	// port is the port the device picked when ListenPort was 0 ("any"):
	// the kernel binds a random one and lists it.
	port int
}

func newWGDevice(impl string, index int) *wgDevice {
	return &wgDevice{d: model.WireGuard{Implementation: impl}, port: 40000 + index}
}

// PutWireGuard stores the device of the WireGuard link name (which PutLink
// stores apart), without a write.
func (f *Kernel) PutWireGuard(name string, w *model.WireGuard) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := &wgDevice{d: cloneWG(w)}
	if d.d.Implementation == "" {
		d.d.Implementation = kernel.WireGuardKernel
	}
	f.wg[name] = d
}

func cloneWG(w *model.WireGuard) model.WireGuard {
	c := *w
	c.Peers = make([]model.WireGuardPeer, len(w.Peers))
	for i, p := range w.Peers {
		p.AllowedIPs = append([]netip.Prefix(nil), p.AllowedIPs...)
		p.Endpoints = nil
		c.Peers[i] = p
	}
	return c
}

// WireGuardDevice reads a device as wgctrl does: no private key, peers
// sorted, ErrNotFound when name is not a WireGuard device.
func (f *Kernel) WireGuardDevice(name string) (*model.WireGuard, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallWireGuardDevice, name); err != nil {
		return nil, fmt.Errorf("read wireguard device %s: %w", name, err)
	}
	d := f.wg[name]
	if d == nil {
		return nil, fmt.Errorf("wireguard device %s: %w", name, kernel.ErrNotFound)
	}
	w := cloneWG(&d.d)
	w.PrivateKey, w.PrivateKeyFile, w.PrivateKeyCredential = model.Secret{}, "", ""
	if w.ListenPort == 0 {
		w.ListenPort = d.port
	}
	for i := range w.Peers {
		w.Peers[i].EndpointCandidate = -1
	}
	model.SortPeers(w.Peers)
	return &w, nil
}

// ConfigureWireGuard applies the patch as the kernel does: the device's
// key, port and mark, then the peers one by one. A peer refused (an
// injected "ConfigureWireGuardPeer" failure) ends the call with its error;
// what came before it stays applied.
func (f *Kernel) ConfigureWireGuard(name string, cfg *kernel.WireGuardConfig) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if err := f.injected(CallConfigureWireGuard, name); err != nil {
		return fmt.Errorf("configure wireguard device %s: %w", name, err)
	}
	d := f.wg[name]
	if d == nil {
		return fmt.Errorf("configure wireguard device %s: %w", name, kernel.ErrNotFound)
	}
	w := &d.d
	if cfg.PrivateKey != nil {
		w.PrivateKey = *cfg.PrivateKey
		w.PublicKey = model.Key{}
		if w.PrivateKey.IsSet() {
			w.PublicKey = w.PrivateKey.PublicKey()
		}
	}
	if cfg.ListenPort != nil {
		if *cfg.ListenPort != 0 {
			for n, o := range f.wg {
				if n != name && o.d.ListenPort == *cfg.ListenPort {
					return fmt.Errorf("configure wireguard device %s: port %d: %w", name, *cfg.ListenPort, syscall.EADDRINUSE)
				}
			}
		}
		w.ListenPort = *cfg.ListenPort
	}
	if cfg.FwMark != nil {
		w.FwMark = *cfg.FwMark
	}
	for _, pp := range cfg.Peers {
		if err := f.injected(CallConfigureWireGuardPeer, pp.PublicKey.String()); err != nil {
			return fmt.Errorf("configure wireguard device %s: peer %s: %w", name, pp.PublicKey, err)
		}
		i := slices.IndexFunc(w.Peers, func(p model.WireGuardPeer) bool { return p.PublicKey == pp.PublicKey })
		if pp.Remove {
			if i >= 0 {
				w.Peers = slices.Delete(w.Peers, i, i+1)
			}
			continue
		}
		if i < 0 {
			if pp.UpdateOnly {
				continue // WGPEER_F_UPDATE_ONLY: a missing peer is not created
			}
			w.Peers = append(w.Peers, model.WireGuardPeer{PublicKey: pp.PublicKey})
			i = len(w.Peers) - 1
		}
		p := &w.Peers[i]
		if pp.PresharedKey != nil {
			p.PresharedKey = *pp.PresharedKey
			if p.PresharedKey.Bytes() == ([model.KeyLen]byte{}) {
				p.PresharedKey = model.Secret{}
			}
		}
		if pp.Endpoint.IsValid() {
			p.Endpoint = pp.Endpoint
		}
		if pp.Keepalive != nil {
			p.Keepalive = *pp.Keepalive
		}
		if pp.ReplaceAllowedIPs {
			p.AllowedIPs = nil
		}
		for _, a := range pp.AllowedIPs {
			a = a.Masked()
			// An allowed IP has one peer: adding it moves it.
			for j := range w.Peers {
				w.Peers[j].AllowedIPs = slices.DeleteFunc(w.Peers[j].AllowedIPs, func(b netip.Prefix) bool { return b == a })
			}
			p = &w.Peers[i]
			p.AllowedIPs = append(p.AllowedIPs, a)
		}
		model.SortPrefixes(p.AllowedIPs)
	}
	f.logged(CallConfigureWireGuard, name)
	return nil
}

// StartUserspaceWireGuard makes the tun link of a wireguard-go device
// (kind tuntap, MTU 1420, not marked), unless NoUserspaceWireGuard.
func (f *Kernel) StartUserspaceWireGuard(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if f.NoUserspaceWireGuard {
		return fmt.Errorf("start userspace wireguard for %s: %w", name, kernel.ErrUnsupported)
	}
	if err := f.injected(CallStartUserspaceWireGuard, name); err != nil {
		return fmt.Errorf("start userspace wireguard for %s: %w", name, err)
	}
	if _, ok := f.links[name]; ok {
		return fmt.Errorf("start userspace wireguard for %s: %w", name, syscall.EEXIST)
	}
	f.nextIndex++
	f.links[name] = &model.Link{Name: name, Kind: "tuntap", MTU: 1420, Index: f.nextIndex}
	f.wg[name] = newWGDevice(kernel.WireGuardUserspace, f.nextIndex)
	f.logged(CallStartUserspaceWireGuard, name)
	return nil
}
