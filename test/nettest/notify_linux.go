package nettest

import (
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Notifications returns the rtnetlink notifications of groups (RTNLGRP_*)
// that do causes in the namespace ns, each as the kernel sent it (the
// netlink header, then the body), in the order they came. It reads until
// no notification has come for a quarter of a second after do returned.
func Notifications(t testing.TB, ns string, groups []uint32, do func()) [][]byte {
	t.Helper()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	defer h.Close()
	c, err := netlink.Dial(unix.NETLINK_ROUTE, &netlink.Config{NetNS: int(h)})
	if err != nil {
		t.Fatalf("netlink socket in %s: %v", ns, err)
	}
	defer c.Close()
	for _, g := range groups {
		if err := c.JoinGroup(g); err != nil {
			t.Fatalf("join group %d: %v", g, err)
		}
	}
	do()
	var out [][]byte
	for {
		if err := c.SetReadDeadline(time.Now().Add(250 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		msgs, err := c.Receive()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return out
		}
		if err != nil {
			t.Fatalf("receive notifications: %v", err)
		}
		for _, m := range msgs {
			b := make([]byte, unix.SizeofNlMsghdr, unix.SizeofNlMsghdr+len(m.Data))
			ne := binary.NativeEndian
			ne.PutUint32(b, uint32(unix.SizeofNlMsghdr+len(m.Data)))
			ne.PutUint16(b[4:], uint16(m.Header.Type))
			ne.PutUint16(b[6:], uint16(m.Header.Flags))
			ne.PutUint32(b[8:], m.Header.Sequence)
			ne.PutUint32(b[12:], m.Header.PID)
			out = append(out, append(b, m.Data...))
		}
	}
}
