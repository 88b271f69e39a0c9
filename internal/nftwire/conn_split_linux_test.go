package nftwire

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"syscall"
	"testing"
)

// Dump reads a datagram's messages in place; they are the messages
// syscall.ParseNetlinkMessage gives, and a datagram it refuses is refused.
func TestSplitMessagesAsSyscall(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 2))
	for round := 0; round < 20000; round++ {
		var b []byte
		for range rng.IntN(5) {
			n := rng.IntN(40)
			h := make([]byte, 16)
			binary.NativeEndian.PutUint32(h, uint32(16+n))
			binary.NativeEndian.PutUint16(h[4:], uint16(rng.IntN(20)))
			binary.NativeEndian.PutUint16(h[6:], uint16(rng.Uint32()))
			binary.NativeEndian.PutUint32(h[8:], rng.Uint32())
			binary.NativeEndian.PutUint32(h[12:], rng.Uint32())
			b = append(b, h...)
			for range n {
				b = append(b, byte(rng.IntN(256)))
			}
			for len(b)%4 != 0 && rng.IntN(4) != 0 {
				b = append(b, 0)
			}
		}
		switch rng.IntN(6) {
		case 0:
			if len(b) > 0 {
				b = b[:rng.IntN(len(b))]
			}
		case 1:
			if len(b) > 4 {
				b[rng.IntN(4)] = byte(rng.IntN(256))
			}
		}
		want, werr := syscall.ParseNetlinkMessage(b)
		if err := checkDatagram(b); (err != nil) != (werr != nil) {
			t.Fatalf("round %d, %x: checked %v, parsed %v", round, b, err, werr)
		}
		if werr != nil {
			continue
		}
		rest := b
		for i, m := range want {
			if len(rest) < syscall.NLMSG_HDRLEN {
				t.Fatalf("round %d, %x: %d messages split, %d parsed", round, b, i, len(want))
			}
			h, data, r := splitMessage(rest)
			rest = r
			if h != m.Header || !bytes.Equal(data, m.Data) {
				t.Fatalf("round %d, %x: message %d split as %+v %x, parsed %+v %x", round, b, i, h, data, m.Header, m.Data)
			}
		}
		if len(rest) >= syscall.NLMSG_HDRLEN {
			t.Fatalf("round %d, %x: more split than the %d parsed", round, b, len(want))
		}
	}
}
