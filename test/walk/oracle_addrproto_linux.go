package walk

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel/rtnl"
)

// readAddrProtocols dumps the addresses of ns and returns the protocol of
// each ("LINK ADDR/LEN"), and whether the kernel records protocols
// (release 6.3 or later, or an address that carries one). The oracle reads
// everything else with `ip -j`; iproute2 6.1 does not print IFA_PROTO, so
// this one field is read with the codec, on a socket of the oracle's own
// (mdlayher/netlink's), not through the kernel package.
func readAddrProtocols(ns string, names map[int]string) (map[string]int, bool, error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, false, fmt.Errorf("address dump: %w", err)
	}
	defer h.Close()
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(h)})
	if err != nil {
		return nil, false, fmt.Errorf("address dump: %w", err)
	}
	defer c.Close()
	req, err := rtnl.MarshalAddress(&rtnl.Address{Family: unix.AF_UNSPEC})
	if err != nil {
		return nil, false, err
	}
	msgs, err := c.Execute(netlink.Message{Header: netlink.Header{Type: unix.RTM_GETADDR, Flags: netlink.Request | netlink.Dump}, Data: req})
	if err != nil {
		return nil, false, fmt.Errorf("address dump: %w", err)
	}
	out := map[string]int{}
	any := false
	for _, m := range msgs {
		if m.Header.Flags&netlink.DumpInterrupted != 0 {
			return nil, false, errors.New("address dump interrupted")
		}
		if m.Header.Type != unix.RTM_NEWADDR {
			continue
		}
		var a rtnl.Address
		if err := rtnl.DecodeAddress(m.Data, &a); errors.Is(err, rtnl.ErrFamily) {
			continue
		} else if err != nil {
			return nil, false, fmt.Errorf("address dump: %w", err)
		}
		addr := a.Address
		if a.Local.IsValid() {
			addr = a.Local
		}
		out[fmt.Sprintf("%s %s", names[int(a.Index)], netip.PrefixFrom(addr, int(a.PrefixLen)))] = int(a.Protocol)
		any = any || a.Protocol != 0
	}
	return out, any || rtnl.AddressProtocols(), nil
}
