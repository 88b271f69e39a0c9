package daemon

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	mdnl "github.com/mdlayher/netlink"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// kernelMessages are notifications a real kernel sent, one datagram a
// file, kept by the codec's TestKernelMessages (-rtnl.update).
const kernelMessages = "../kernel/rtnl/testdata/kernel"

// FuzzEvents feeds the event path a datagram as a notification socket
// reads it: it is split into messages, each judged as every source would
// judge it, against a snapshot. Nothing panics, and the socket prefilter
// passes every route notification the exact filter wakes on, if it is laid
// out as the kernel writes one (a single message, each attribute once).
func FuzzEvents(f *testing.F) {
	files, err := filepath.Glob(filepath.Join(kernelMessages, "*.bin"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no kernel messages in %s: %v", kernelMessages, err)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, m := range []syscall.NetlinkMessage{
		nftMsg(nftMsgNewSetElem, unix.NFPROTO_INET, "nr"), nftMsg(nftMsgNewTable, unix.NFPROTO_IPV4, "filter"), nftMsg(nftMsgNewGen, 0, ""),
	} {
		f.Add(wire(m))
	}
	w := filterFixture()
	prog, err := bpf.NewVM(routePrefilter(w))
	if err != nil {
		f.Fatal(err)
	}
	srcs := []string{srcLinks, srcAddresses, srcRoutes, srcRules, srcNftables}
	ef := NewEventFilter()
	ef.swap(w)
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := syscall.ParseNetlinkMessage(b)
		if err != nil {
			msgs = []syscall.NetlinkMessage{unreadable}
		}
		for _, m := range msgs {
			for _, src := range srcs {
				ef.decide(src, m)
			}
		}
		pass, err := prog.Run(b)
		if err != nil {
			t.Fatalf("prefilter: %v", err)
		}
		if len(msgs) != 1 || int(msgs[0].Header.Len) != len(b) || !eachAttrOnce(msgs[0].Data) {
			return
		}
		if e, ok := decodeRoute(msgs[0]); ok && w.route(e) && pass == 0 {
			t.Fatalf("the prefilter drops a notification the filter wakes on: %+v", e)
		}
	})
}

// eachAttrOnce reports whether a route message's attributes are each of
// another type, as the kernel writes them; of two, the prefilter reads the
// first and a decoder the last.
func eachAttrOnce(body []byte) bool {
	if len(body) < unix.SizeofRtMsg {
		return true
	}
	ad, err := mdnl.NewAttributeDecoder(body[unix.SizeofRtMsg:])
	if err != nil {
		return true
	}
	seen := map[uint16]bool{}
	for ad.Next() {
		if seen[ad.Type()] {
			return false
		}
		seen[ad.Type()] = true
	}
	return true
}
