package actual

import (
	"errors"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// tunKind is how the kernel reader names a tun link; wireguard-go's devices
// are tun links.
const tunKind = "tuntap"

// readWireGuard reads the device and peers of every WireGuard link. A tun
// link netreconcile created and wireguard-go serves is a userspace
// WireGuard device: it is reported as kind wireguard, so the diff treats
// both implementations alike. Foreign tun links are not probed: the
// userspace control sockets are shared by every namespace, and a foreign
// tun of the same name as a device elsewhere would be mistaken for it.
func readWireGuard(k kernel.Reader, st *model.State) error {
	for _, name := range st.SortedLinkNames() {
		l := st.Links[name]
		if l.Kind != model.KindWireGuard && !(l.Kind == tunKind && l.Owned) {
			continue
		}
		d, err := k.WireGuardDevice(name)
		if errors.Is(err, kernel.ErrNotFound) {
			if l.WireGuard != nil {
				// A link of an earlier read whose device is gone (a
				// wireguard-go that exited): the tun link it was.
				c := *l
				if l.WireGuard.Implementation == kernel.WireGuardUserspace {
					c.Kind = tunKind
				}
				c.WireGuard = nil
				st.Links[name] = &c
			}
			continue
		}
		if err != nil {
			return err
		}
		// A copy: the link may be shared with an earlier read (ReadReusing).
		c := *l
		c.Kind = model.KindWireGuard
		c.WireGuard = d
		st.Links[name] = &c
	}
	return nil
}
