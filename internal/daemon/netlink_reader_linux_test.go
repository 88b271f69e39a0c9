package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// ip runs ip(8) for an internal test (nettest imports this package
// through the command, so it cannot be used here).
func ip(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %v: %v: %s", args, err, out)
	}
}

// The subscription reader, on a real socket: a notification is read whole
// and decodes; one longer than the buffer arrives truncated and is handed
// to the filter as a message no decoder reads, which wakes (the kind is
// read again), never as a half-read message taken for something else.
func TestEventReaderReadsWholeOrWakes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: network namespaces")
	}
	ns := fmt.Sprintf("nrr-%d", os.Getpid())
	ip(t, "netns", "add", ns)
	t.Cleanup(func() { ip(t, "netns", "del", ns) })
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	f := NewEventFilter()
	f.swap(filterFixture())
	for i, tc := range []struct {
		size      int
		truncated bool
	}{{eventBufLen, false}, {64, true}} {
		s, err := nl.SubscribeAt(h, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_LINK)
		if err != nil {
			t.Fatal(err)
		}
		r, err := newEventReader(s, tc.size)
		if err != nil {
			t.Fatal(err)
		}
		name := []string{"nrread0", "nrread1"}[i]
		ip(t, "-n", ns, "link", "add", name, "type", "bridge")
		type got struct {
			n    int
			e    linkEvent
			ok   bool
			wake bool
			pid  uint32
			err  error
		}
		done := make(chan got, 1)
		go func() {
			msgs, from, err := r.read()
			if err != nil {
				done <- got{err: err}
				return
			}
			e, ok := decodeLink(msgs[0])
			done <- got{n: len(msgs), e: e, ok: ok, wake: f.decide(srcLinks, msgs[0]), pid: from.Pid}
		}()
		select {
		case g := <-done:
			switch {
			case g.err != nil:
				t.Fatalf("buffer %d: %v", tc.size, g.err)
			case g.n != 1 || g.pid != nl.PidKernel:
				t.Errorf("buffer %d: %d messages from port %d, want 1 from the kernel", tc.size, g.n, g.pid)
			case tc.truncated && (g.ok || !g.wake):
				t.Errorf("buffer %d: a truncated notification decoded (%v) or did not wake (%v)", tc.size, g.ok, g.wake)
			case !tc.truncated && (!g.ok || g.e.name != name):
				t.Errorf("buffer %d: the notification of %s decoded as %+v (%v)", tc.size, name, g.e, g.ok)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("buffer %d: no notification read", tc.size)
		}
		r.close()
		s.Close()
	}
}
