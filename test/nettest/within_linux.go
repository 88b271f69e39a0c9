package nettest

import (
	"runtime"
	"testing"

	"github.com/vishvananda/netns"
)

// Within runs f on a locked thread that is in namespace ns for its
// duration: sockets f opens belong to ns.
func Within(t testing.TB, ns string, f func()) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	self, err := netns.Get()
	if err != nil {
		t.Fatal(err)
	}
	defer self.Close()
	h, err := netns.GetFromName(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := netns.Set(h); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := netns.Set(self); err != nil {
			panic(err) // the thread is locked: never hand it back in the wrong namespace
		}
	}()
	f()
}
