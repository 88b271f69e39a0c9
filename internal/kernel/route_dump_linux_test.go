package kernel_test

import (
	"fmt"
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
	f := filepath.Join(t.TempDir(), "foreign.batch")
	if err := os.WriteFile(f, []byte(batch.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	nettest.IP(t, ns, "-batch", f)

	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.Links(); err != nil {
		t.Fatal(err)
	}
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

func routeLines(rs []model.Route) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %s proto %d\n", r.String(), r.Protocol)
	}
	return b.String()
}
