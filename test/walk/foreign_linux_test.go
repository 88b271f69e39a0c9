package walk

import (
	"strings"
	"testing"
)

// A family-wide key that sets IPv6 up afresh reaches every link, foreign
// ones too, by the kernel's design: the foreign check took the multicast
// route the kernel gave a foreign link for netreconcile's change (walk
// finding 106, guest walk seed 9708058099391, step 35: all.addr_gen_mode
// gave the foreign bond port fd1 ff00::/8 in table local). Here the
// foreign link is a veth end up without its carrier, which the kernel
// gives no IPv6 set-up either until the key is written. The steps that
// write the key pass; a change of that set-up in a step that writes no such
// key is still a failure.
func TestWalkFinding106FamilyWideKeyRemakesIPv6OnForeignLinks(t *testing.T) {
	foreign := []string{"ip link add fv9a type veth peer name fv9b", "ip link set fv9a up"}
	r := kernelRunner(t, foreign)
	const mroute = "route multicast ff00::/8 dev fv9a table local"
	if contains(r.auto0, mroute) {
		t.Fatalf("fv9a, without its carrier, has its IPv6 set-up before the key is written: %q", r.auto0)
	}
	plain := &Config{Protocol: 245, Links: map[string]*Link{}}
	keyed := plain.Clone()
	keyed.Sysctls = map[string]string{"net.ipv6.conf.all.addr_gen_mode": "1"}
	for i, c := range []*Config{plain, keyed, plain} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("%v", f)
		}
		if i == 1 && !contains(r.auto0, mroute) {
			t.Fatalf("all.addr_gen_mode written: the kernel's IPv6 set-up of the foreign links is %q, without %q", r.auto0, mroute)
		}
	}
	// The same change in a step that writes no such key.
	var without []string
	for _, l := range r.auto0 {
		if !strings.Contains(l, "fv9a") {
			without = append(without, l)
		}
	}
	if d := ipv6AutoChanged(without, r.auto0); !strings.Contains(d, "+ "+mroute) {
		t.Errorf("ff00::/8 new on a foreign link: ipv6AutoChanged says %q", d)
	}
	if d := ipv6AutoChanged(r.auto0, without); !strings.Contains(d, "- "+mroute) {
		t.Errorf("ff00::/8 gone from a foreign link: ipv6AutoChanged says %q", d)
	}
	if writesIPv6Reset([]planOp{{Kind: "sysctl", ID: "net.ipv6.conf.all.ignore_routes_with_linkdown", Changes: make([]struct {
		Field string `json:"field"`
	}, 1)}}) {
		t.Error("all.ignore_routes_with_linkdown taken for a key that sets IPv6 up afresh")
	}
}
