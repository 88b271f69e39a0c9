package daemon

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// wire is a notification as the socket filter sees it: the netlink header,
// then the message.
func wire(m syscall.NetlinkMessage) []byte {
	b := make([]byte, unix.NLMSG_HDRLEN, unix.NLMSG_HDRLEN+len(m.Data))
	binary.NativeEndian.PutUint32(b, uint32(unix.NLMSG_HDRLEN+len(m.Data)))
	binary.NativeEndian.PutUint16(b[4:], m.Header.Type)
	return append(b, m.Data...)
}

func runPrefilter(t *testing.T, w *watchSet, m syscall.NetlinkMessage) bool {
	t.Helper()
	return prefilterVM(t, w)(m)
}

func prefilterVM(t *testing.T, w *watchSet) func(syscall.NetlinkMessage) bool {
	t.Helper()
	prog := routePrefilter(w)
	if len(prog) > 4096 {
		t.Fatalf("prefilter of %d instructions, over BPF_MAXINSNS", len(prog))
	}
	vm, err := bpf.NewVM(prog)
	if err != nil {
		t.Fatal(err)
	}
	return func(m syscall.NetlinkMessage) bool {
		n, err := vm.Run(wire(m))
		if err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
}

// The kernel-side prefilter drops plainly foreign route notifications, and
// never one the exact filter would wake on.
func TestRoutePrefilter(t *testing.T) {
	w := filterFixture()
	for _, tc := range []struct {
		name string
		m    syscall.NetlinkMessage
		pass bool
	}{
		{"route of ours", routeMsg(unix.RTM_NEWROUTE, model.DefaultProtocol, 200, "192.0.2.0/24"), true},
		{"foreign route, declared key", routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "10.1.0.0/24"), true},
		{"foreign route deleted, declared key", routeMsg(unix.RTM_DELROUTE, protoBird, 100, "10.1.0.0/24"), true},
		{"foreign route inside a declared prefix", routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "10.1.0.128/25"), true},
		{"foreign route, other destination", routeMsg(unix.RTM_NEWROUTE, protoBird, 100, "10.2.0.0/24"), false},
		{"foreign route deleted, other destination", routeMsg(unix.RTM_DELROUTE, protoBird, 100, "172.16.0.0/12"), false},
		{"foreign route, other table", routeMsg(unix.RTM_NEWROUTE, protoBird, 101, "10.1.0.0/24"), false},
		{"foreign IPv6 route, declared table", routeMsg(unix.RTM_NEWROUTE, protoBird, 1000, "2001:db8:1::/64"), true},
		{"foreign IPv6 route, other table", routeMsg(unix.RTM_NEWROUTE, protoBird, 1001, "2001:db8::/64"), false},
		{"foreign default route, declared table", routeMsg(unix.RTM_NEWROUTE, protoBird, model.TableMain, "0.0.0.0/0"), true},
		{"no table attribute first", msg(unix.RTM_NEWROUTE, []byte{unix.AF_INET, 24, 0, 0, 100, protoBird, 0, 1, 0, 0, 0, 0}, nlattr(unix.RTA_DST, []byte{10, 2, 0, 0})), true},
		{"no destination attribute second", msg(unix.RTM_NEWROUTE, []byte{unix.AF_INET, 24, 0, 0, 100, protoBird, 0, 1, 0, 0, 0, 0}, nlattr(unix.RTA_TABLE, u32(100)), nlattr(unix.RTA_OIF, u32(2))), true},
		{"message cut short", msg(unix.RTM_NEWROUTE, []byte{unix.AF_INET, 24}), true},
		{"another message type", msg(unix.RTM_NEWNEIGH, make([]byte, 12)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := runPrefilter(t, w, tc.m); got != tc.pass {
				t.Errorf("passes = %v, want %v", got, tc.pass)
			}
		})
	}
	// No snapshot: no program, everything passes.
	if routePrefilter(nil) != nil {
		t.Error("a prefilter without a snapshot")
	}
}

// Random files and notifications: whatever the exact filter would wake on,
// the prefilter passes, also when the file has more tables and ranges than
// the program checks one by one (it widens).
func TestRoutePrefilterPassesWhatWakes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	randPrefix := func() netip.Prefix {
		bits := 8 + rng.IntN(25)
		a := netip.AddrFrom4([4]byte{byte(rng.IntN(4)), byte(rng.IntN(256)), byte(rng.IntN(256)), byte(rng.IntN(256))})
		if rng.IntN(10) == 0 {
			var b [16]byte
			b[0], b[1], b[15] = 0x20, 0x01, byte(rng.IntN(256))
			return netip.PrefixFrom(netip.AddrFrom16(b), 64+rng.IntN(65)).Masked()
		}
		return netip.PrefixFrom(a, bits).Masked()
	}
	for round := range 40 {
		want := model.NewState()
		want.Protocol = model.DefaultProtocol
		nRoutes := []int{1, 10, 300, 3000}[round%4]
		nTables := []int{1, 3, 40}[round%3]
		for range nRoutes {
			want.Routes = append(want.Routes, model.Route{Table: uint32(100 + rng.IntN(nTables)), Dst: randPrefix()})
		}
		w := buildWatchSet(want, nil, nil)
		vm := prefilterVM(t, w)
		passed, dropped := 0, 0
		check := func(m syscall.NetlinkMessage) {
			wake := w.route(mustRoute(t, m))
			pass := vm(m)
			if wake && !pass {
				t.Fatalf("round %d: the prefilter drops a notification the filter wakes on: %+v", round, mustRoute(t, m))
			}
			if pass {
				passed++
			} else {
				dropped++
			}
		}
		for i := range 2000 {
			typ := uint16(unix.RTM_NEWROUTE)
			if i%2 == 1 {
				typ = unix.RTM_DELROUTE
			}
			proto := protoBird
			if rng.IntN(20) == 0 {
				proto = model.DefaultProtocol
			}
			table := 100 + rng.IntN(nTables+2)
			dst := randPrefix()
			if rng.IntN(3) == 0 {
				// One of the file's keys.
				r := want.Routes[rng.IntN(len(want.Routes))]
				table, dst = int(r.Table), r.Dst
			}
			check(routeMsg(typ, proto, table, dst.String()))
		}
		if nRoutes <= 10 && nTables <= 3 && dropped == 0 {
			t.Errorf("round %d (%d routes in %d tables): the prefilter dropped nothing of %d", round, nRoutes, nTables, passed)
		}
	}
}

func mustRoute(t *testing.T, m syscall.NetlinkMessage) routeEvent {
	t.Helper()
	e, ok := decodeRoute(m)
	if !ok {
		t.Fatalf("undecodable test message")
	}
	return e
}

func TestCoverRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 5, 300, 5000} {
		var in []v4range
		for range n {
			lo := rng.Uint32() &^ 0xff
			in = append(in, v4range{lo, lo + uint32(rng.IntN(4096))})
		}
		orig := append([]v4range(nil), in...)
		out := coverRanges(in, prefilterMaxRanges)
		if len(out) > prefilterMaxRanges {
			t.Errorf("%d ranges in: %d out, want at most %d", n, len(out), prefilterMaxRanges)
		}
		for _, r := range orig {
			covered := false
			for _, c := range out {
				if c.lo <= r.lo && r.hi <= c.hi {
					covered = true
				}
			}
			if !covered {
				t.Fatalf("%d ranges in: %s not covered by %v", n, fmt.Sprint(r), out)
			}
		}
	}
}
