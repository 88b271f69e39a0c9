package kernel

import (
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// FouPorts lists FoU ports; ErrUnsupported when the kernel has no FoU.
func (k *Netlink) FouPorts() ([]model.FouPort, error) {
	// The kernel's dump ignores the requested family and lists every port
	// with its own FOU_ATTR_AF: one dump, each port by the family it reports.
	var fs []netlink.Fou
	err := retry("fou ports", func() (err error) { fs, err = k.h.FouList(unix.AF_INET); return })
	if err != nil {
		if fouMissing(err) {
			return nil, fmt.Errorf("list fou ports: %w", ErrUnsupported)
		}
		return nil, err
	}
	out := make([]model.FouPort, 0, len(fs))
	for _, f := range fs {
		out = append(out, model.FouPort{Port: uint16(f.Port), IPv6: f.Family == unix.AF_INET6, IPProto: uint8(f.Protocol), GUE: f.EncapType == netlink.FOU_ENCAP_GUE})
	}
	model.SortFou(out)
	return out, nil
}

// fouMissing recognises the answers of a kernel without the fou generic
// netlink family (module not built or not loadable).
func fouMissing(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOTSUP)
}

func toFou(f *model.FouPort) netlink.Fou {
	nf := netlink.Fou{Family: unix.AF_INET, Port: int(f.Port), Protocol: int(f.IPProto), EncapType: netlink.FOU_ENCAP_DIRECT}
	if f.IPv6 {
		nf.Family = unix.AF_INET6
	}
	if f.GUE {
		nf.EncapType, nf.Protocol = netlink.FOU_ENCAP_GUE, 0
	}
	return nf
}

// AddFou opens a FoU receive port.
func (k *Netlink) AddFou(f *model.FouPort) error {
	k.wrote()
	if err := k.h.FouAdd(toFou(f)); err != nil {
		if fouMissing(err) {
			return fmt.Errorf("add %s: %w", f.Key(), ErrUnsupported)
		}
		return fmt.Errorf("add %s: %w", f.Key(), err)
	}
	return nil
}

// DeleteFou closes a FoU receive port.
func (k *Netlink) DeleteFou(f *model.FouPort) error {
	k.wrote()
	if err := k.h.FouDel(toFou(f)); err != nil {
		return fmt.Errorf("delete %s: %w", f.Key(), err)
	}
	return nil
}
