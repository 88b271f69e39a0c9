package walk

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"runtime"
	"syscall"

	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ifaProto is IFA_PROTO (include/uapi/linux/if_addr.h, Linux 6.3).
const ifaProto = 11

// readAddrProtocols dumps the addresses of ns with a netlink socket of its
// own and returns the protocol of each ("LINK ADDR/LEN") that has one,
// and whether the kernel records protocols (release 6.3 or later, or an
// address that carries one). iproute2 6.1 does not print IFA_PROTO: this
// is the oracle's own reading, written apart from the kernel package's.
func readAddrProtocols(ns string, names map[int]string) (map[string]int, bool, error) {
	fd, err := socketIn(ns)
	if err != nil {
		return nil, false, err
	}
	defer unix.Close(fd)
	req := make([]byte, unix.SizeofNlMsghdr+unix.SizeofIfAddrmsg)
	ne := binary.NativeEndian
	ne.PutUint32(req[0:4], uint32(len(req)))
	ne.PutUint16(req[4:6], unix.RTM_GETADDR)
	ne.PutUint16(req[6:8], unix.NLM_F_REQUEST|unix.NLM_F_DUMP)
	ne.PutUint32(req[8:12], 1)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return nil, false, err
	}
	out := map[string]int{}
	buf := make([]byte, 1<<16)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			return nil, false, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return nil, false, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case unix.NLMSG_DONE:
				any := false
				for _, p := range out {
					any = any || p != 0
				}
				return out, any || releaseAtLeast(6, 3), nil
			case unix.NLMSG_ERROR:
				return nil, false, fmt.Errorf("address dump: netlink error")
			case unix.RTM_NEWADDR:
			default:
				continue
			}
			if m.Header.Flags&unix.NLM_F_DUMP_INTR != 0 {
				return nil, false, fmt.Errorf("address dump interrupted")
			}
			b := m.Data
			if len(b) < unix.SizeofIfAddrmsg {
				continue
			}
			plen, index := int(b[1]), int(ne.Uint32(b[4:8]))
			attrs, err := syscall.ParseNetlinkRouteAttr(&m)
			if err != nil {
				continue
			}
			var local, addr netip.Addr
			proto := 0
			for _, a := range attrs {
				switch a.Attr.Type {
				case unix.IFA_LOCAL:
					local, _ = netip.AddrFromSlice(a.Value)
				case unix.IFA_ADDRESS:
					addr, _ = netip.AddrFromSlice(a.Value)
				case ifaProto:
					if len(a.Value) > 0 {
						proto = int(a.Value[0])
					}
				}
			}
			if local.IsValid() {
				addr = local
			}
			out[fmt.Sprintf("%s %s", names[index], netip.PrefixFrom(addr, plen))] = proto
		}
	}
}

// socketIn opens a routing netlink socket inside ns.
func socketIn(ns string) (int, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := netns.Get()
	if err != nil {
		return -1, err
	}
	defer self.Close()
	h, err := netns.GetFromName(ns)
	if err != nil {
		return -1, err
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		return -1, err
	}
	fd, serr := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err := netns.Set(self); err != nil {
		panic(err) // the thread is locked: never hand it back in the wrong namespace
	}
	if serr != nil {
		return -1, serr
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// releaseAtLeast compares the running kernel's release with major.minor.
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
