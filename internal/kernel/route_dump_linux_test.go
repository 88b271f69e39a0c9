package kernel_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Routes parses dumps itself: it reads every kind of route the reconciler
// writes exactly as the library does, and with foreign routes present the
// kernel sends only ours (filtered by protocol under strict checking).
func TestRoutesDump(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "nrdump0", "type", "bridge")
	nettest.IP(t, ns, "link", "set", "nrdump0", "up")
	nettest.IP(t, ns, "addr", "add", "10.20.0.1/24", "dev", "nrdump0")
	nettest.IP(t, ns, "addr", "add", "2001:db8:20::1/64", "dev", "nrdump0")
	p := fmt.Sprint(model.DefaultProtocol)
	for _, r := range [][]string{
		{"10.30.0.0/16", "via", "10.20.0.254", "dev", "nrdump0", "metric", "10", "mtu", "1400"},
		{"10.31.0.0/16", "via", "10.20.0.254", "src", "10.20.0.1", "table", "1000"},
		{"10.32.0.0/16", "via", "192.0.2.1", "dev", "nrdump0", "onlink", "table", "100"},
		{"blackhole", "10.33.0.0/16", "table", "100"},
		{"unreachable", "10.34.0.0/16", "tos", "0x10"},
		{"default", "via", "10.20.0.254", "table", "100"},
		{"2001:db8:30::/48", "via", "2001:db8:20::fe", "dev", "nrdump0", "metric", "5"},
		{"2001:db8:31::/48", "dev", "nrdump0", "table", "100"},
	} {
		args := append([]string{"route", "add"}, r...)
		nettest.IP(t, ns, append(args, "proto", p)...)
	}
	// Foreign routes, more than ours, in the same table.
	var batch strings.Builder
	const foreign = 2000
	for i := 0; i < foreign; i++ {
		fmt.Fprintf(&batch, "route add 10.%d.%d.0/24 dev nrdump0 table 100 proto static\n", 100+i/256, i%256)
	}
	k := batchOpen(t, ns, batch.String())
	for _, proto := range []int{model.DefaultProtocol, 0} {
		got, err := k.Routes(proto)
		if err != nil {
			t.Fatal(err)
		}
		want, err := kernel.RoutesByLibrary(k, proto)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("protocol %d: routes differ from the library's:\nours:\n%s\nlibrary:\n%s", proto, routeLines(got), routeLines(want))
		}
		if proto != 0 {
			if len(got) != 8 {
				t.Errorf("%d routes of our protocol, want 8:\n%v", len(got), got)
			}
			if n := kernel.RouteMessages(k); n != len(got) {
				t.Errorf("the kernel sent %d route messages for %d routes of our protocol: not filtered in the kernel", n, len(got))
			}
		} else if len(got) < foreign+8 {
			t.Errorf("%d routes of all protocols, want at least %d", len(got), foreign+8)
		}
	}
}

// batchOpen runs the ip -batch lines of batch in namespace ns, then opens
// the kernel there with its links read (the route reads name links by
// index), closed when the test ends.
func batchOpen(t testing.TB, ns, batch string) *kernel.Netlink {
	t.Helper()
	f := filepath.Join(t.TempDir(), "routes.batch")
	if err := os.WriteFile(f, []byte(batch), 0o644); err != nil {
		t.Fatal(err)
	}
	nettest.IP(t, ns, "-batch", f)
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	if _, err := k.Links(); err != nil {
		t.Fatal(err)
	}
	return k
}

func routeLines(rs []model.Route) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s proto %d\n", r.String(), r.Protocol)
	}
	return b.String()
}

// RoutesWithKeys finds the routes of the keys asked, of every protocol, in
// one table, as the library lists that table: the conflict check of a plan
// that creates routes keeps those, not the rest of the table. TableRoutes,
// which reads ours only, is held to the library the same way.
func TestRoutesWithKeys(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "nrkeys0", "type", "bridge")
	nettest.IP(t, ns, "link", "set", "nrkeys0", "up")
	var batch strings.Builder
	for i := 0; i < 3000; i++ {
		proto := []string{"static", "bird", fmt.Sprint(model.DefaultProtocol)}[i%3]
		table := []int{100, 200}[i%2]
		fmt.Fprintf(&batch, "route add 10.%d.%d.0/24 dev nrkeys0 table %d proto %s metric %d\n", i/256, i%256, table, proto, i%5)
		fmt.Fprintf(&batch, "route add 2001:db8:%x::/48 dev nrkeys0 table %d proto %s\n", i, table, proto)
	}
	k := batchOpen(t, ns, batch.String())
	all, err := kernel.RoutesByLibrary(k, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []int{100, 200, 300} {
		var inTable []model.Route
		for _, r := range all {
			if int(r.Table) == table {
				inTable = append(inTable, r)
			}
		}
		// Every seventh route of the table, and keys nothing holds (the
		// key of another table, another metric).
		keys := map[model.RouteKey]bool{}
		var want []model.Route
		for i, r := range inTable {
			if i%7 == 0 {
				keys[r.Key()] = true
				want = append(want, r)
			}
			other := r.Key()
			other.Metric += 1000
			keys[other] = true
			other = r.Key()
			other.Table = 300
			keys[other] = true
		}
		got, err := k.RoutesWithKeys(table, keys)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Errorf("table %d: RoutesWithKeys found\n%s\nthe library lists\n%s", table, routeLines(got), routeLines(want))
		}
		if table == 100 && len(want) < 400 {
			t.Errorf("table %d: %d routes asked, want many", table, len(want))
		}
		ours, err := k.TableRoutes(table, model.DefaultProtocol)
		if err != nil {
			t.Fatal(err)
		}
		var wantOurs []model.Route
		for _, r := range inTable {
			if r.Protocol == model.DefaultProtocol {
				wantOurs = append(wantOurs, r)
			}
		}
		if !reflect.DeepEqual(ours, wantOurs) && (len(ours) != 0 || len(wantOurs) != 0) {
			t.Errorf("table %d: TableRoutes lists %d routes of ours, the library %d", table, len(ours), len(wantOurs))
		}
	}
}

// The conflict check's read walks the families of the keys it looks for
// only: an IPv4 key in a table that also holds IPv6 routes (main, beside a
// full Internet table: a fifth of it) costs none of the IPv6 ones, and the
// reverse (issue 34).
func TestIssue34RoutesWithKeysWalksTheKeysFamily(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "nrfam0", "type", "bridge")
	nettest.IP(t, ns, "link", "set", "nrfam0", "up")
	var batch strings.Builder
	const n4, n6 = 300, 500
	for i := range n4 {
		fmt.Fprintf(&batch, "route add 10.%d.%d.0/24 dev nrfam0 table 100 proto static\n", i/256, i%256)
	}
	for i := range n6 {
		fmt.Fprintf(&batch, "route add 2001:db8:%x::/48 dev nrfam0 table 100 proto bird\n", i)
	}
	k := batchOpen(t, ns, batch.String())
	// A table the family lacks holds nothing (asked of one family, the
	// kernel answers ENOENT).
	for _, key := range []model.RouteKey{
		{Table: 101, Dst: netip.MustParsePrefix("10.0.7.0/24")},
		{Table: 101, Dst: netip.MustParsePrefix("2001:db8:7::/48"), Metric: 1024},
	} {
		if got, err := k.RoutesWithKeys(101, map[model.RouteKey]bool{key: true}); err != nil || len(got) != 0 {
			t.Errorf("%s in a table that does not exist: %v, %v", key.Dst, got, err)
		}
	}
	v4 := model.RouteKey{Table: 100, Dst: netip.MustParsePrefix("10.0.7.0/24")}
	v6 := model.RouteKey{Table: 100, Dst: netip.MustParsePrefix("2001:db8:7::/48"), Metric: 1024}
	for _, tc := range []struct {
		name    string
		keys    []model.RouteKey
		found   int
		atMost  int
		atLeast int
	}{
		{"IPv4 key", []model.RouteKey{v4}, 1, n4, n4},
		{"IPv6 key", []model.RouteKey{v6}, 1, n6 + 10, n6},
		{"both", []model.RouteKey{v4, v6}, 2, n4 + n6 + 10, n4 + n6},
	} {
		keys := map[model.RouteKey]bool{}
		for _, key := range tc.keys {
			keys[key] = true
		}
		got, err := k.RoutesWithKeys(100, keys)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.found {
			t.Errorf("%s: found %v, want %d routes", tc.name, got, tc.found)
		}
		if m := kernel.RouteMessages(k); m < tc.atLeast || m > tc.atMost {
			t.Errorf("%s: the kernel sent %d route messages, want %d to %d", tc.name, m, tc.atLeast, tc.atMost)
		}
	}
}
