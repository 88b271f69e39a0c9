package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// churnConfig declares one object of every kind the daemon repairs.
const churnConfig = `version: 1
links:
  nrc0:
    kind: bridge
    mtu: 1400
    state: up
    addresses: [10.81.0.1/24]
routes:
  - {to: 10.82.0.0/16, via: 10.81.0.254, table: 100}
  - {to: 10.86.0.0/16, via: 10.81.0.254}
  - {to: 10.87.0.0/16, via: 10.81.0.254, table: 102}
rules:
  - {priority: 1000, from: 10.81.0.0/24, table: 100}
nftables:
  inet nrc:
    sets:
      s:
        type: ipv4_addr
        elements: [10.83.0.1, 10.83.0.2]
    chains:
      c:
        type: filter
        hook: output
        priority: filter
        rules:
          - ip daddr 10.76.0.0/16 meta mark set 0x40 accept
`

// foreignChurn is another daemon busy beside ours: routes of its own
// protocol in our table, rules of its own priority, addresses on its own
// link, elements of its own nftables set, a link of its own coming and
// going. Nothing of it may wake a pass (filter.go).
func foreignChurn(t *testing.T, ns, dir string, stop <-chan struct{}) *sync.WaitGroup {
	t.Helper()
	nettest.IP(t, ns, "link", "add", "fo0", "type", "veth", "peer", "name", "fo1")
	nettest.IP(t, ns, "link", "set", "fo0", "up")
	nettest.InNS(t, ns, "nft", "add table inet theirs; add set inet theirs s { type ipv4_addr; }")
	var add, del bytes.Buffer
	for i := range 500 {
		fmt.Fprintf(&add, "route add 10.%d.%d.0/24 dev fo0 table 100 proto bird\n", 120+i/250, i%250)
		fmt.Fprintf(&del, "route del 10.%d.%d.0/24 dev fo0 table 100 proto bird\n", 120+i/250, i%250)
	}
	fmt.Fprintf(&add, "rule add priority 3000 from 10.119.0.0/24 table 200 proto bird\naddress add 10.118.0.1/24 dev fo0\nlink add fo2 type bridge\n")
	fmt.Fprintf(&del, "rule del priority 3000\naddress del 10.118.0.1/24 dev fo0\nlink del fo2\n")
	addF, delF := filepath.Join(dir, "foreign-add"), filepath.Join(dir, "foreign-del")
	if err := os.WriteFile(addF, add.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(delF, del.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			for _, c := range [][]string{
				{"ip", "-n", ns, "-batch", addF},
				{"ip", "netns", "exec", ns, "nft", fmt.Sprintf("add element inet theirs s { 10.117.%d.%d }", i/250%250, i%250)},
				{"ip", "-n", ns, "-batch", delF},
			} {
				if out, err := exec.Command(c[0], c[1:]...).CombinedOutput(); err != nil {
					t.Errorf("foreign churn: %s: %v: %s", strings.Join(c, " "), err, out)
					return
				}
			}
		}
	})
	return &wg
}

// Drift of every kind the daemon repairs is repaired while another daemon
// churns its own objects beside ours, with the periodic resync an hour away:
// a notification the event filter wrongly dropped would leave the drift in
// place and fail the test. Meanwhile the churn alone wakes no pass.
func TestRepairsDriftUnderForeignChurn(t *testing.T) {
	t.Parallel()
	ns := churnNS(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "netreconcile.yaml")
	writeInPlace(t, cfg, churnConfig)
	p := startDaemon(t, ns, cfg, filepath.Join(dir, "state"), nil, "--resync-interval", "1h")
	p.waitMsg(0, "READY=1", startDeadline)
	state := func() string {
		return withoutForeign(kernelState(t, ns)) +
			linkLine(t, ns, "nrc0") + linkLine(t, ns, "nrx0") +
			nftTable(ns, "inet", "nrc")
	}
	want := state()
	for _, s := range []string{"10.81.0.1/24", "10.82.0.0/16", "10.86.0.0/16", "10.87.0.0/16 via 10.81.0.254 dev nrc0 table 102", "1000:", "mtu 1400", ",UP", "10.83.0.2", "meta mark set"} {
		if !strings.Contains(want, s) {
			t.Fatalf("converged state lacks %q:\n%s", s, want)
		}
	}

	stop := make(chan struct{})
	wg := foreignChurn(t, ns, dir, stop)
	defer func() { close(stop); wg.Wait() }()

	// The churn wakes nothing: at most a pass or two for the objects the
	// churn's first round appeared beside (a new link, which the filter has
	// not seen, wakes once for its addresses).
	time.Sleep(time.Second)
	before := p.count()
	time.Sleep(2 * time.Second)
	if passes := statusCount(p.messages()[before:]); passes > 2 {
		t.Errorf("%d passes in 2 s of foreign churn alone, want at most 2", passes)
	}

	for _, tc := range []struct {
		name  string
		drift []string
	}{
		// A pass after a route notification reads again only the
		// tables notifications named (filter_pass.go): drift in one
		// table, in the main one, in several at once, and ours in a
		// table the file never names.
		{"route deleted", []string{"ip", "-n", ns, "route", "del", "10.82.0.0/16", "table", "100"}},
		{"route deleted in the main table", []string{"ip", "-n", ns, "route", "del", "10.86.0.0/16"}},
		{"routes deleted in three tables at once", []string{"sh", "-c", "printf 'route del 10.87.0.0/16 table 102\\nroute del 10.86.0.0/16\\nroute del 10.82.0.0/16 table 100\\n' | ip -n " + ns + " -batch -"}},
		{"route changed in place", []string{"ip", "-n", ns, "route", "change", "10.87.0.0/16", "dev", "nrc0", "table", "102", "proto", "245"}},
		{"route of ours added in a table the file does not name", []string{"ip", "-n", ns, "route", "add", "10.88.0.0/16", "via", "10.81.0.254", "table", "300", "proto", "245"}},
		{"rule deleted", []string{"ip", "-n", ns, "rule", "del", "priority", "1000"}},
		{"address deleted", []string{"ip", "-n", ns, "addr", "del", "10.81.0.1/24", "dev", "nrc0"}},
		{"link MTU changed", []string{"ip", "-n", ns, "link", "set", "nrc0", "mtu", "1500"}},
		{"link down", []string{"ip", "-n", ns, "link", "set", "nrc0", "down"}},
		{"nftables set element deleted", []string{"ip", "netns", "exec", ns, "nft", "delete element inet nrc s { 10.83.0.2 }"}},
		{"nftables rule deleted", []string{"ip", "netns", "exec", ns, "nft", "flush chain inet nrc c"}},
		{"nftables table deleted", []string{"ip", "netns", "exec", ns, "nft", "delete table inet nrc"}},
		{"link deleted", []string{"ip", "-n", ns, "link", "del", "nrc0"}},
		// Objects of ours the file does not declare: deleted. (The
		// marker is written on a link that is down without a
		// notification: the link's coming up tells.)
		{"route of ours added", []string{"ip", "-n", ns, "route", "add", "10.84.0.0/16", "via", "10.81.0.254", "table", "100", "proto", "245"}},
		{"rule of ours added", []string{"ip", "-n", ns, "rule", "add", "priority", "1001", "from", "10.85.0.0/24", "table", "100", "proto", "245"}},
		{"link of ours added", []string{"sh", "-c", "ip -n " + ns + " link add nrx0 type bridge && ip -n " + ns + " link set nrx0 alias netreconcile && ip -n " + ns + " link set nrx0 up"}},
	} {
		converged(t, "converged before "+tc.name, want, state)
		start := time.Now()
		nettest.Exec(t, tc.drift[0], tc.drift[1:]...)
		converged(t, tc.name+": repaired under foreign churn", want, state)
		t.Logf("%s: repaired in %v", tc.name, time.Since(start).Round(time.Millisecond))
	}
}

// churnRepairDeadline bounds each repair in TestRepairsDriftUnderForeignChurn.
// A repair takes about 100 ms (make bench-daemon); rendering the state
// takes five commands, slow on a loaded machine. What the test catches is a
// notification the filter wrongly dropped: then the repair waits for the
// resync, an hour away.
const churnRepairDeadline = 3 * time.Second

// converged waits until state() is want, at most churnRepairDeadline.
func converged(t *testing.T, what, want string, state func() string) {
	t.Helper()
	deadline := time.Now().Add(churnRepairDeadline)
	for {
		got := state()
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s; kernel:\n%s\nwant:\n%s", what, churnRepairDeadline, got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

var flagsRE = regexp.MustCompile(`<([^>]*)>.* mtu (\d+)`)

// linkLine renders a link's flags and MTU.
func linkLine(t *testing.T, ns, name string) string {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", name).CombinedOutput()
	if err != nil {
		return "no link " + name + "\n"
	}
	m := flagsRE.FindStringSubmatch(string(out))
	if m == nil {
		return string(out)
	}
	return fmt.Sprintf("%s <%s> mtu %s\n", name, m[1], m[2])
}

// withoutForeign drops the lines of foreignChurn's objects (its link's
// address, its rule): they come and go.
func withoutForeign(s string) string {
	var b strings.Builder
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.Contains(l, "fo0") && !strings.Contains(l, "proto bird") {
			b.WriteString(l)
		}
	}
	return b.String()
}

// nftTable renders a table as nft lists it, or says it is missing.
func nftTable(ns, family, name string) string {
	out, err := exec.Command("ip", "netns", "exec", ns, "nft", "list", "table", family, name).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("no table %s %s: %v\n", family, name, err)
	}
	return string(out)
}

// statusCount counts the passes among notifications: each sends STATUS=.
func statusCount(msgs []string) int {
	n := 0
	for _, m := range msgs {
		if hasLine(m, "STATUS=") {
			n++
		}
	}
	return n
}
