package integration

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// What the plan says an op disrupts is what the kernel does: for every
// link op, the ifindex kept (in place, flapped) or not (recreated), the
// link seen going down and up by `ip monitor link` (flapped) or never
// down (in place); for every nftables table op, the table's handle kept or
// not (replaced). Each class is met here on this kernel; the bond and vrf
// flaps in the guest (test/e2e, TestDisruptionGuest), with the same check.

// linkEvent is one line of `ip -o monitor link`.
type linkEvent struct {
	deleted bool
	index   string
	name    string
	up      bool
}

var monitorLine = regexp.MustCompile(`^(Deleted )?(\d+): ([^:@]+)(?:@[^:]+)?: <([^>]*)>`)

// monitorLinks runs `ip -o monitor link` in ns until stop, which returns
// the events seen.
func monitorLinks(t *testing.T, ns string) (stop func() []linkEvent) {
	t.Helper()
	cmd := exec.Command("ip", "-n", ns, "-o", "monitor", "link")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	events := make(chan []linkEvent, 1)
	go func() {
		var evs []linkEvent
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			m := monitorLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			flags := "," + m[4] + ","
			evs = append(evs, linkEvent{deleted: m[1] != "", index: m[2], name: m[3], up: strings.Contains(flags, ",UP,")})
		}
		events <- evs
	}()
	// ip monitor subscribes before it prints anything: give it the time.
	time.Sleep(300 * time.Millisecond)
	return func() []linkEvent {
		time.Sleep(300 * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return <-events
	}
}

var addrDeleted = regexp.MustCompile(`^Deleted \d+: (\S+)\s+inet6? ([^/ ]+)`)

// monitorAddrDeletes runs `ip -o monitor address` in ns until stop, which
// returns the addresses seen deleted, as "IP LINK".
func monitorAddrDeletes(t *testing.T, ns string) (stop func() map[string]bool) {
	t.Helper()
	cmd := exec.Command("ip", "-n", ns, "-o", "monitor", "address")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	seen := make(chan map[string]bool, 1)
	go func() {
		m := map[string]bool{}
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if g := addrDeleted.FindStringSubmatch(sc.Text()); g != nil {
				m[g[2]+" "+g[1]] = true
			}
		}
		seen <- m
	}()
	time.Sleep(300 * time.Millisecond)
	return func() map[string]bool {
		time.Sleep(300 * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return <-seen
	}
}

// indexes maps link names to ifindexes.
func (e *env) indexes() map[string]string {
	e.t.Helper()
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(e.ip("-o", "link")), "\n") {
		if m := monitorLine.FindStringSubmatch(l); m != nil {
			out[m[3]] = m[2]
		}
	}
	return out
}

// tableHandles maps "family name" to the nftables table's handle.
func (e *env) tableHandles() map[string]float64 {
	e.t.Helper()
	var doc struct {
		Nftables []map[string]struct {
			Family string  `json:"family"`
			Name   string  `json:"name"`
			Handle float64 `json:"handle"`
		} `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(nettest.InNS(e.t, e.ns, "nft", "-j", "list", "tables")), &doc); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, o := range doc.Nftables {
		if t, ok := o["table"]; ok {
			out[t.Family+" "+t.Name] = t.Handle
		}
	}
	return out
}

// checkDisruptions applies file and checks every op of its plan against
// what the kernel did; it returns the classes met.
func checkDisruptions(t *testing.T, e *env, file string) map[diff.Disruption]int {
	t.Helper()
	r := e.cli("diff", "-c", file, "-o", "json")
	var plan struct {
		Ops []diff.Op `json:"ops"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &plan); err != nil {
		t.Fatalf("diff: %v\n%s%s", err, r.Stdout, r.Stderr)
	}
	idx, handles := e.indexes(), e.tableHandles()
	wasUp := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(e.ip("-o", "link")), "\n") {
		if m := monitorLine.FindStringSubmatch(l); m != nil {
			wasUp[m[3]] = strings.Contains(","+m[4]+",", ",UP,")
		}
	}
	stop := monitorLinks(t, e.ns)
	stopAddrs := monitorAddrDeletes(t, e.ns)
	e.apply(file)
	events := stop()
	gone := stopAddrs()
	idx2, handles2 := e.indexes(), e.tableHandles()
	met := map[diff.Disruption]int{}
	for _, op := range plan.Ops {
		met[op.Disruption]++
		switch {
		case op.Kind == diff.KindLink:
			checkLinkOp(t, op, idx, idx2, wasUp, events)
		case op.Kind == diff.KindNftTable && op.Action != diff.Create && op.Action != diff.Delete:
			k := strings.TrimPrefix(op.ID, "")
			replaced := handles[k] != handles2[k]
			if replaced != (op.Disruption == diff.TableReplaced) {
				t.Errorf("%s %s says %s; table handle %v -> %v", op.Kind, op.ID, op.Disruption, handles[k], handles2[k])
			}
		case op.Kind == diff.KindAddress && op.Action != diff.Create && op.Action != diff.Delete:
			// The op's id is "ADDR/LEN dev LINK"; ip monitor names an
			// address by its IP and link.
			f := strings.Fields(op.ID)
			ip, _, _ := strings.Cut(f[0], "/")
			deleted := gone[ip+" "+f[len(f)-1]]
			if deleted != (op.Disruption == diff.Readded) {
				t.Errorf("%s %s %s says %s; ip monitor saw it deleted: %v", op.Action, op.Kind, op.ID, op.Disruption, deleted)
			}
		case op.Kind.IsNft() && op.Disruption == diff.InPlace:
			// Its table keeps its handle, unless another op replaces it.
			k := strings.Join(strings.Fields(op.ID)[:2], " ")
			if handles[k] != 0 && handles[k] != handles2[k] && !replacedIn(plan.Ops, k) {
				t.Errorf("%s %s says in place; its table was replaced (handle %v -> %v)", op.Kind, op.ID, handles[k], handles2[k])
			}
		}
	}
	return met
}

func replacedIn(ops []diff.Op, table string) bool {
	for _, op := range ops {
		if op.Kind == diff.KindNftTable && op.ID == table && op.Disruption == diff.TableReplaced {
			return true
		}
	}
	return false
}

// checkLinkOp holds one link op to what the kernel did to its link.
func checkLinkOp(t *testing.T, op diff.Op, before, after map[string]string, wasUp map[string]bool, events []linkEvent) {
	t.Helper()
	name := op.ID
	existed, exists := before[name] != "", after[name] != ""
	deleted, down, upAgain := false, false, false
	for _, ev := range events {
		if ev.name != name {
			continue
		}
		switch {
		case ev.deleted && ev.index == before[name]:
			// Also sent (AF_BRIDGE) when a port leaves its bridge:
			// a deletion is one whose index is gone after.
			deleted = after[name] != before[name]
		case ev.index == before[name] && !ev.up:
			down = true
		case ev.index == before[name] && ev.up && down:
			upAgain = true
		}
	}
	say := func(what string) {
		t.Errorf("%s %s %s says %s (%s), but %s", op.Action, op.Kind, op.ID, op.Disruption, op.Reason, what)
	}
	switch op.Disruption {
	case diff.LinkRecreated:
		if !existed || !exists || before[name] == after[name] || !deleted {
			say("its ifindex went " + before[name] + " -> " + after[name])
		}
	case diff.LinkFlapped:
		if before[name] != after[name] {
			say("its ifindex changed")
		}
		if !down || !upAgain {
			say("ip monitor did not see it go down and up")
		}
	case diff.InPlace:
		if op.Action == diff.Create || op.Action == diff.Delete || !existed {
			return
		}
		if before[name] != after[name] || deleted {
			say("it was recreated")
		}
		if wasUp[name] && down {
			say("ip monitor saw it go down")
		}
	}
}

func TestDisruptionClassesOnTheKernel(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	const base = `version: 1
links:
  up0: {kind: veth, veth: {peer: up1}}
  up1: {kind: veth, veth: {peer: up0}}
  br0: {kind: bridge, mtu: 1500}
  br1: {kind: bridge, addresses: [{address: 10.77.0.1/32, scope: global}, 10.78.0.1/24]}
  d0: {kind: veth, master: br0, alias: a, veth: {peer: d1}}
  d1: {kind: veth, veth: {peer: d0}}
  mv0: {kind: macvlan, macvlan: {parent: up0, mode: passthru}}
  mv1: {kind: macvlan, macvlan: {parent: up1, mode: bridge}}
  vx0: {kind: vxlan, vxlan: {id: 100, remote: 192.0.2.2}}
nftables:
  inet t:
    sets:
      s: {type: ipv4_addr, elements: [192.0.2.1]}
  inet u:
    sets:
      s: {type: ipv4_addr, elements: [192.0.2.1]}
`
	f := e.file("d.yaml", base)
	e.apply(f)
	met := map[diff.Disruption]int{}
	for _, step := range []struct {
		name string
		edit *strings.Replacer
	}{{
		name: "in place: MTU, alias, a port moving bridges, a macvlan's mode, a set's element",
		edit: strings.NewReplacer("mtu: 1500", "mtu: 1400", "alias: a", "alias: b", "master: br0", "master: br1", "mode: bridge", "mode: vepa",
			"u:\n    sets:\n      s: {type: ipv4_addr, elements: [192.0.2.1]}", "u:\n    sets:\n      s: {type: ipv4_addr, elements: [192.0.2.1, 192.0.2.9]}"),
	}, {
		name: "readded: an address's scope",
		edit: strings.NewReplacer("scope: global}", "scope: host}"),
	}, {
		name: "flapped: a passthru macvlan that is up joins a bridge",
		edit: strings.NewReplacer("mode: passthru}}", "mode: passthru}, master: br1}"),
	}, {
		name: "recreated: a vxlan id, a macvlan into passthru; replaced: a set's type",
		edit: strings.NewReplacer("id: 100", "id: 101", "parent: up1, mode: vepa", "parent: up1, mode: passthru",
			"t:\n    sets:\n      s: {type: ipv4_addr, elements: [192.0.2.1]}", "t:\n    sets:\n      s: {type: inet_service, elements: [80]}"),
	}} {
		t.Run(step.name, func(t *testing.T) {
			cur := step.edit.Replace(readFile(t, f))
			e.file("d.yaml", cur)
			for d, n := range checkDisruptions(t, e, f) {
				met[d] += n
			}
		})
	}
	for _, d := range diff.Disruptions() {
		if met[d] == 0 {
			t.Errorf("no op of class %s was met: the test checks nothing of it", d)
		}
	}
	t.Logf("ops checked per class: %v", met)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
