package kernel_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// batchPrefix is the i-th /24 under 10.0.0.0/8.
func batchPrefix(i int) netip.Prefix {
	return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(i >> 8), byte(i), 0}), 24)
}

// A batch larger than one window, where some writes fail in the kernel
// (an existing foreign route, a delete of nothing) and one before it (a
// missing device): exactly those writes get an error, each its own, and
// every other write happens.
func TestWriteRoutesReportsEachFailure(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "nrbatch0", "type", "bridge")
	nettest.IP(t, ns, "link", "set", "nrbatch0", "up")
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()

	const n = 3000 // several windows
	foreign := map[int]bool{}
	for i := 5; i < n; i += 997 {
		foreign[i] = true
		nettest.IP(t, ns, "route", "add", batchPrefix(i).String(), "dev", "nrbatch0", "table", "100", "proto", "static")
	}
	routes := make([]model.Route, n)
	ws := make([]kernel.RouteWrite, n)
	for i := range routes {
		routes[i] = model.Route{Table: 100, Dst: batchPrefix(i), Type: model.RouteUnicast, Dev: "nrbatch0", Scope: model.ScopeLink}
		ws[i] = kernel.RouteWrite{Action: kernel.RouteAdd, Route: &routes[i]}
	}
	routes[1500].Dev = "nrmissing0"
	gone := model.Route{Table: 100, Dst: netip.MustParsePrefix("192.0.2.0/24"), Protocol: model.DefaultProtocol}
	ws = append(ws, kernel.RouteWrite{Action: kernel.RouteDelete, Route: &gone})
	mtu := routes[7]
	mtu.MTU = 1400
	ws = append(ws, kernel.RouteWrite{Action: kernel.RouteReplace, Route: &mtu})

	before := k.Writes()
	errs := k.WriteRoutes(ws, model.DefaultProtocol)
	if len(errs) != len(ws) {
		t.Fatalf("%d errors for %d writes", len(errs), len(ws))
	}
	for i, err := range errs {
		switch {
		case foreign[i]:
			if !errors.Is(err, syscall.EEXIST) || !strings.Contains(err.Error(), "add route "+batchPrefix(i).String()+" table 100: a route with this key exists") {
				t.Errorf("write %d: got %v, want EEXIST for a foreign route", i, err)
			}
		case i == 1500:
			if !errors.Is(err, kernel.ErrNotFound) {
				t.Errorf("write %d: got %v, want the missing link", i, err)
			}
		case i == n:
			if !errors.Is(err, syscall.ESRCH) || !strings.HasPrefix(err.Error(), "delete route 192.0.2.0/24 table 100: ") {
				t.Errorf("delete of a missing route: got %v, want ESRCH", err)
			}
		case err != nil:
			t.Errorf("write %d: %v", i, err)
		}
	}
	// The missing link was never sent.
	if got, want := k.Writes()-before, uint64(len(ws)-1); got != want {
		t.Errorf("%d writes counted, want %d", got, want)
	}
	out := nettest.IP(t, ns, "route", "show", "table", "100")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != n-1 {
		t.Errorf("table 100 holds %d routes, want %d", len(lines), n-1)
	}
	ours := nettest.IP(t, ns, "route", "show", "table", "100", "proto", fmt.Sprint(model.DefaultProtocol))
	if got := strings.Count(ours, "\n"); got != n-1-len(foreign) {
		t.Errorf("%d routes of our protocol, want %d", got, n-1-len(foreign))
	}
	if !strings.Contains(ours, "10.0.7.0/24 dev nrbatch0 scope link mtu 1400") {
		t.Errorf("the replace did not set the MTU:\n%s", ours)
	}
	if strings.Contains(out, "10.5.220.0/24") {
		t.Errorf("the route with a missing device was written:\n%s", out)
	}

	// The route socket keeps no window's buffers for the next batch.
	if held := kernel.BatchHeld(k); held != 0 {
		t.Errorf("the route socket holds %d bytes of buffers after the batch", held)
	}

	// Deleting everything in one batch leaves only the foreign routes.
	got, err := k.Routes(model.DefaultProtocol)
	if err != nil {
		t.Fatal(err)
	}
	// Sized by what the batch added: a daemon keeps this list.
	if cap(got) != len(got) {
		t.Errorf("the list after the batch has room for %d routes, holds %d", cap(got), len(got))
	}
	del := make([]kernel.RouteWrite, len(got))
	for i := range got {
		del[i] = kernel.RouteWrite{Action: kernel.RouteDelete, Route: &got[i]}
	}
	for i, err := range k.WriteRoutes(del, model.DefaultProtocol) {
		if err != nil {
			t.Errorf("delete %s: %v", got[i].Key(), err)
		}
	}
	if left := strings.Count(nettest.IP(t, ns, "route", "show", "table", "100"), "\n"); left != len(foreign) {
		t.Errorf("%d routes left, want the %d foreign ones", left, len(foreign))
	}
}
