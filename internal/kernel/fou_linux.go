package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
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
	add := func() error { return k.h.FouAdd(toFou(f)) }
	if f.GUE {
		add = func() error { return k.InNamespace(func() error { return addGUE(toFou(f)) }) }
	}
	if err := add(); err != nil {
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

// addGUE opens a GUE port in the calling thread's namespace. The library's
// FouAdd always sends FOU_ATTR_IPPROTO, 0 for GUE; kernels with "fou: don't
// allow 0 for FOU_ATTR_IPPROTO" (6.9, backported to the stable series: the
// guest's 6.1.192 has it) refuse that with ERANGE, so the request here
// leaves the attribute out, as ip fou add ... gue does.
func addGUE(f netlink.Fou) error {
	fam, err := netlink.FouFamilyId()
	if err != nil {
		return err
	}
	req := nl.NewNetlinkRequest(fam, unix.NLM_F_ACK)
	port := make([]byte, 2)
	binary.BigEndian.PutUint16(port, uint16(f.Port))
	raw := []byte{netlink.FOU_CMD_ADD, 1, 0, 0}
	for _, a := range []*nl.RtAttr{
		nl.NewRtAttr(netlink.FOU_ATTR_PORT, port),
		nl.NewRtAttr(netlink.FOU_ATTR_TYPE, []byte{uint8(netlink.FOU_ENCAP_GUE)}),
		nl.NewRtAttr(netlink.FOU_ATTR_AF, []byte{uint8(f.Family)}),
	} {
		raw = append(raw, a.Serialize()...)
	}
	req.AddRawData(raw)
	_, err = req.Execute(unix.NETLINK_GENERIC, 0)
	return err
}
