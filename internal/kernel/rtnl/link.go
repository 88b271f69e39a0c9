package rtnl

import (
	"fmt"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Link is an RTM_NEWLINK, RTM_DELLINK or RTM_SETLINK message: the
// ifinfomsg header and the attributes netreconcile reads in a link event
// or writes in a request the library has no call for. Links are listed
// with vishvananda/netlink, which reads every kind's attributes.
type Link struct {
	Family uint8
	// Type is ARPHRD_*.
	Type  uint16
	Index int32
	// Flags are IFF_*; Change is the mask of the flags a request sets.
	Flags, Change uint32
	Name, Alias   string
	MTU           uint32
	// Master is IFLA_MASTER and Link IFLA_LINK (the lower link), 0 for
	// none.
	Master, Link uint32
	// Kind is IFLA_INFO_KIND in IFLA_LINKINFO.
	Kind string
	// InfoData is IFLA_INFO_DATA's value, the kind's attributes, encoded:
	// written as given, not decoded.
	InfoData []byte
	// INETConf are IPV4_DEVCONF_* settings written in IFLA_AF_SPEC /
	// AF_INET / IFLA_INET_CONF; not decoded.
	INETConf []DevConf
}

// DevConf is one IPV4_DEVCONF_* setting: its attribute type and value.
type DevConf struct {
	Type  uint16
	Value uint32
}

// DecodeLink decodes a link message's body (the ifinfomsg and its
// attributes).
func DecodeLink(b []byte, l *Link) error {
	if len(b) < unix.SizeofIfInfomsg {
		return fmt.Errorf("link message of %d bytes", len(b))
	}
	*l = Link{Family: b[0], Type: native.Uint16(b[2:]), Index: int32(native.Uint32(b[4:])),
		Flags: native.Uint32(b[8:]), Change: native.Uint32(b[12:])}
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofIfInfomsg:])
	if err != nil {
		return fmt.Errorf("link attributes: %w", err)
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.IFLA_IFNAME:
			l.Name = ad.String()
		case unix.IFLA_IFALIAS:
			l.Alias = ad.String()
		case unix.IFLA_MTU:
			l.MTU = ad.Uint32()
		case unix.IFLA_MASTER:
			l.Master = ad.Uint32()
		case unix.IFLA_LINK:
			l.Link = ad.Uint32()
		case unix.IFLA_LINKINFO:
			ad.Nested(func(info *netlink.AttributeDecoder) error {
				for info.Next() {
					if info.Type() == unix.IFLA_INFO_KIND {
						l.Kind = info.String()
					}
				}
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("link attributes: %w", err)
	}
	return nil
}

// MarshalLink encodes l as a link request's body: the ifinfomsg, then
// IFLA_IFNAME, IFLA_MTU, IFLA_MASTER, IFLA_LINK and IFLA_IFALIAS where
// set, IFLA_LINKINFO when a kind or its data is, and IFLA_AF_SPEC with the
// IPv4 settings of INETConf.
func MarshalLink(l *Link) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	if l.Name != "" {
		ae.String(unix.IFLA_IFNAME, l.Name)
	}
	if l.MTU != 0 {
		ae.Uint32(unix.IFLA_MTU, l.MTU)
	}
	if l.Master != 0 {
		ae.Uint32(unix.IFLA_MASTER, l.Master)
	}
	if l.Link != 0 {
		ae.Uint32(unix.IFLA_LINK, l.Link)
	}
	if l.Alias != "" {
		ae.String(unix.IFLA_IFALIAS, l.Alias)
	}
	if l.Kind != "" || l.InfoData != nil {
		ae.Nested(unix.IFLA_LINKINFO, func(info *netlink.AttributeEncoder) error {
			if l.Kind != "" {
				info.String(unix.IFLA_INFO_KIND, l.Kind)
			}
			if l.InfoData != nil {
				info.Do(netlink.Nested|unix.IFLA_INFO_DATA, func() ([]byte, error) { return l.InfoData, nil })
			}
			return nil
		})
	}
	if len(l.INETConf) > 0 {
		ae.Nested(unix.IFLA_AF_SPEC, func(spec *netlink.AttributeEncoder) error {
			spec.Nested(unix.AF_INET, func(inet *netlink.AttributeEncoder) error {
				inet.Nested(unix.IFLA_INET_CONF, func(conf *netlink.AttributeEncoder) error {
					for _, c := range l.INETConf {
						conf.Uint32(c.Type, c.Value)
					}
					return nil
				})
				return nil
			})
			return nil
		})
	}
	var h [unix.SizeofIfInfomsg]byte
	h[0] = l.Family
	native.PutUint16(h[2:], l.Type)
	native.PutUint32(h[4:], uint32(l.Index))
	native.PutUint32(h[8:], l.Flags)
	native.PutUint32(h[12:], l.Change)
	return body(h[:], ae)
}

// LinkInfoData returns the value of IFLA_INFO_DATA in a link message's
// body (the kind's attributes, still encoded), or nil when it has none.
func LinkInfoData(b []byte) ([]byte, error) {
	if len(b) < unix.SizeofIfInfomsg {
		return nil, fmt.Errorf("link message of %d bytes", len(b))
	}
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofIfInfomsg:])
	if err != nil {
		return nil, fmt.Errorf("link attributes: %w", err)
	}
	var data []byte
	for ad.Next() {
		if ad.Type() != unix.IFLA_LINKINFO {
			continue
		}
		ad.Nested(func(info *netlink.AttributeDecoder) error {
			for info.Next() {
				if info.Type() == unix.IFLA_INFO_DATA {
					data = info.Bytes()
				}
			}
			return nil
		})
	}
	if err := ad.Err(); err != nil {
		return nil, fmt.Errorf("link attributes: %w", err)
	}
	return data, nil
}
