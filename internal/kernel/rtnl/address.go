package rtnl

import (
	"fmt"
	"net/netip"
	"sync"

	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// Address is an RTM_NEWADDR or RTM_DELADDR message: the ifaddrmsg header
// and the attributes netreconcile reads or writes.
type Address struct {
	Family    uint8
	PrefixLen uint8
	// Flags are IFA_FLAGS, or ifa_flags (their low 8 bits) when absent.
	Flags uint32
	Scope uint8
	Index uint32
	// Local is IFA_LOCAL and Address IFA_ADDRESS: IPv4 sends both, the
	// latter being the peer when they differ; IPv6 sends IFA_ADDRESS
	// alone, or IFA_LOCAL with the peer in IFA_ADDRESS.
	Local, Address netip.Addr
	Broadcast      netip.Addr
	Label          string
	// Protocol is IFA_PROTO, 0 when absent.
	Protocol uint8
	// ValidLft and PreferredLft are IFA_CACHEINFO's lifetimes in seconds
	// (0xffffffff: forever); read only.
	ValidLft, PreferredLft uint32
}

// DecodeAddress decodes an address message's body (the ifaddrmsg and its
// attributes). A family other than IPv4 and IPv6 is ErrFamily.
func DecodeAddress(b []byte, a *Address) error {
	if len(b) < unix.SizeofIfAddrmsg {
		return fmt.Errorf("address message of %d bytes", len(b))
	}
	fam := b[0]
	if fam != unix.AF_INET && fam != unix.AF_INET6 {
		return ErrFamily
	}
	*a = Address{Family: fam, PrefixLen: b[1], Flags: uint32(b[2]), Scope: b[3], Index: native.Uint32(b[4:8])}
	if int(a.PrefixLen) > 8*addrLen(fam) {
		return fmt.Errorf("address prefix length %d", a.PrefixLen)
	}
	ad, err := netlink.NewAttributeDecoder(b[unix.SizeofIfAddrmsg:])
	if err != nil {
		return fmt.Errorf("address attributes: %w", err)
	}
	addr := func(p *netip.Addr) func([]byte) error {
		return func(v []byte) (err error) {
			*p, err = addrOf(v, fam)
			return err
		}
	}
	for ad.Next() {
		switch ad.Type() {
		case unix.IFA_LOCAL:
			ad.Do(addr(&a.Local))
		case unix.IFA_ADDRESS:
			ad.Do(addr(&a.Address))
		case unix.IFA_BROADCAST:
			ad.Do(addr(&a.Broadcast))
		case unix.IFA_LABEL:
			a.Label = ad.String()
		case unix.IFA_FLAGS:
			a.Flags = ad.Uint32()
		case IFA_PROTO:
			a.Protocol = ad.Uint8()
		case unix.IFA_CACHEINFO:
			ad.Do(func(v []byte) error {
				if len(v) != unix.SizeofIfaCacheinfo {
					return fmt.Errorf("address cache info of %d bytes", len(v))
				}
				a.PreferredLft, a.ValidLft = native.Uint32(v), native.Uint32(v[4:])
				return nil
			})
		}
	}
	if err := ad.Err(); err != nil {
		return fmt.Errorf("address attributes: %w", err)
	}
	return nil
}

// MarshalAddress encodes a as an address message's body: the ifaddrmsg
// with the low 8 bits of the flags, then IFA_LOCAL, IFA_ADDRESS,
// IFA_BROADCAST and IFA_LABEL where set, IFA_FLAGS when the flags need more
// than 8 bits, and IFA_PROTO when not 0.
func MarshalAddress(a *Address) ([]byte, error) {
	ae := netlink.NewAttributeEncoder()
	for _, x := range []struct {
		typ uint16
		a   netip.Addr
	}{{unix.IFA_LOCAL, a.Local}, {unix.IFA_ADDRESS, a.Address}, {unix.IFA_BROADCAST, a.Broadcast}} {
		if x.a.IsValid() {
			ae.Bytes(x.typ, x.a.AsSlice())
		}
	}
	if a.Label != "" {
		ae.String(unix.IFA_LABEL, a.Label)
	}
	if a.Flags > 0xff {
		ae.Uint32(unix.IFA_FLAGS, a.Flags)
	}
	if a.Protocol != 0 {
		ae.Uint8(IFA_PROTO, a.Protocol)
	}
	var h [unix.SizeofIfAddrmsg]byte
	h[0], h[1], h[2], h[3] = a.Family, a.PrefixLen, uint8(a.Flags), a.Scope
	native.PutUint32(h[4:], a.Index)
	return body(h[:], ae)
}

// AddressProtocols reports whether the running kernel records an
// address's protocol (IFA_PROTO), by its release (6.3 or later). A dump
// cannot tell: the kernel sends the attribute only when it is not 0.
func AddressProtocols() bool {
	addrProtoOnce.Do(func() { addrProtoRelease = releaseAtLeast(6, 3) })
	return addrProtoRelease
}

var (
	addrProtoOnce    sync.Once
	addrProtoRelease bool
)

// releaseAtLeast compares the running kernel's release (uname -r) with
// major.minor.
func releaseAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
