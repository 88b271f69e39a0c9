package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDisruptionGuest: the disruption the plan gives the ops of the kinds
// this host lacks (bond, vrf, vlan, dummy) is what the kernel does, as
// test/integration's TestDisruptionClassesOnTheKernel checks the others: a
// flapped link keeps its ifindex and `ip monitor link` sees it (and the
// vlans the op names) go down and up; a recreated one gets a new ifindex;
// one in place keeps both.
func TestDisruptionGuest(t *testing.T) {
	requireModules(t, "bonding", "vrf", "8021q", "dummy")
	ns := newNetNS(t, "")
	dir := t.TempDir()
	file, state := filepath.Join(dir, "d.yaml"), t.TempDir()
	const base = `version: 1
links:
  bond0: {kind: bond, bond: {mode: balance-rr, miimon: 100}}
  bond1: {kind: bond, bond: {mode: balance-rr}}
  m1: {kind: dummy, master: bond1}
  blue: {kind: vrf, vrf: {table: 10}}
  d0: {kind: dummy}
  d1: {kind: dummy, mtu: 1500}
  v5: {kind: vlan, vlan: {parent: d1, id: 5}, addresses: [fd00:5::1/64]}
`
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(base)
	runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state)
	cur := base
	met := map[string]int{}
	for _, step := range []struct {
		name string
		edit *strings.Replacer
	}{{
		name: "in place: a bond's miimon, a vlan's parent's MTU",
		edit: strings.NewReplacer("miimon: 100", "miimon: 50", "mtu: 1500", "mtu: 1400"),
	}, {
		name: "flapped: a bond's mode, a link joining a bond, a link (with its vlan) joining a vrf",
		edit: strings.NewReplacer("mode: balance-rr, miimon: 50", "mode: active-backup, miimon: 50", "d0: {kind: dummy}", "d0: {kind: dummy, master: bond0}",
			"d1: {kind: dummy, mtu: 1400}", "d1: {kind: dummy, mtu: 1400, master: blue}"),
	}, {
		name: "recreated: the mode of a bond with a member",
		edit: strings.NewReplacer("bond1: {kind: bond, bond: {mode: balance-rr}}", "bond1: {kind: bond, bond: {mode: active-backup}}"),
	}} {
		t.Run(step.name, func(t *testing.T) {
			cur = step.edit.Replace(cur)
			write(cur)
			var plan struct {
				Ops []struct {
					Action, Kind, ID, Reason string
					Disruption               string `json:"disruption"`
				} `json:"ops"`
			}
			out, _, _ := ns.Exec("", netreconcileBin(t), "diff", "-c", file, "--state-dir", state, "-o", "json")
			if err := json.Unmarshal([]byte(out), &plan); err != nil {
				t.Fatalf("diff: %v\n%s", err, out)
			}
			before := linkIndexes(t, ns)
			stop := monitorLinks(t, ns)
			t.Logf("apply:\n%s", runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state))
			events := stop()
			after := linkIndexes(t, ns)
			for _, op := range plan.Ops {
				if op.Kind != "link" {
					continue
				}
				met[op.Disruption]++
				flaps := func(name string) bool {
					down := false
					for _, ev := range events {
						if ev.name == name && ev.index == before[name] {
							if !ev.up {
								down = true
							} else if down {
								return true
							}
						}
					}
					return false
				}
				name := op.ID
				switch op.Disruption {
				case "link_recreated":
					if before[name] == after[name] {
						t.Errorf("%s says recreated (%s), but kept ifindex %s", name, op.Reason, before[name])
					}
				case "link_flapped":
					if before[name] != after[name] || !flaps(name) {
						t.Errorf("%s says flapped (%s), but ifindex %s -> %s, down and up seen: %v", name, op.Reason, before[name], after[name], flaps(name))
					}
					if _, vs, ok := strings.Cut(op.Reason, "with the vlans on it: "); ok {
						for _, v := range strings.Split(vs, ", ") {
							if !flaps(v) {
								t.Errorf("%s's op names vlan %s, which ip monitor did not see go down and up", name, v)
							}
						}
					}
				case "in_place":
					if op.Action == "update" && (before[name] != after[name] || flaps(name)) {
						t.Errorf("%s says in place, but ifindex %s -> %s, down and up seen: %v", name, before[name], after[name], flaps(name))
					}
				}
			}
		})
	}
	for _, d := range []string{"in_place", "link_flapped", "link_recreated"} {
		if met[d] == 0 {
			t.Errorf("no link op of class %s met", d)
		}
	}
	t.Logf("link ops checked per class: %v", met)
}

type linkEvent struct {
	index, name string
	up          bool
}

var monitorLine = regexp.MustCompile(`^(?:Deleted )?(\d+): ([^:@]+)(?:@[^:]+)?: <([^>]*)>`)

func linkIndexes(t *testing.T, ns *NetNS) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(ns.IP(t, "-o", "link")), "\n") {
		if m := monitorLine.FindStringSubmatch(l); m != nil {
			out[m[2]] = m[1]
		}
	}
	return out
}

// monitorLinks runs `ip -o monitor link` in ns until stop.
func monitorLinks(t *testing.T, ns *NetNS) func() []linkEvent {
	t.Helper()
	cmd := exec.Command("/usr/sbin/ip", "-n", ns.Name, "-o", "monitor", "link")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan []linkEvent, 1)
	go func() {
		var evs []linkEvent
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := monitorLine.FindStringSubmatch(sc.Text()); m != nil && !strings.HasPrefix(sc.Text(), "Deleted ") {
				evs = append(evs, linkEvent{m[1], m[2], strings.Contains(","+m[3]+",", ",UP,")})
			}
		}
		done <- evs
	}()
	time.Sleep(500 * time.Millisecond)
	return func() []linkEvent {
		time.Sleep(500 * time.Millisecond)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return <-done
	}
}
