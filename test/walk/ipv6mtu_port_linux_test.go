package walk

import (
	"os/exec"
	"strings"
	"testing"
)

// converges runs steps on r, each of which must converge, none refused.
func converges(t *testing.T, r *runner, steps ...*Config) {
	t.Helper()
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range steps {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
		if r.refused {
			t.Fatalf("step %d: refused", i+1)
		}
	}
}

// TestWalkFinding200BridgeIPv6MTUWhenAPortJoins replays walk finding 200,
// the carrier case: bridge b5, made without an MTU and without ports, is
// declared at 1500 with ipv6.mtu 1280 in the apply in which veth p0 of
// MTU 1280 joins it. The port pulls the bridge's MTU down, the pin sets it
// back, and the port's carrier reaches the bridge through linkwatch: each
// sets the bridge's net.ipv6.conf.b5.mtu to its MTU.
func TestWalkFinding200BridgeIPv6MTUWhenAPortJoins(t *testing.T) {
	bridge := func(mtu int, v6 string) *Link {
		l := &Link{Name: "b5", Kind: "bridge", MTU: mtu, Addrs: []*Addr{{CIDR: "10.76.5.2/24"}}}
		if v6 != "" {
			l.Sysctls = map[string]string{"ipv6.mtu": v6}
		}
		return l
	}
	steps := []*Config{
		{Protocol: 200, Links: map[string]*Link{"b5": bridge(0, "")}},
		{Protocol: 200, Links: map[string]*Link{"b5": bridge(1500, "1280")}},
		{Protocol: 200, Links: map[string]*Link{"b5": bridge(1500, "1280"),
			"p0": {Name: "p0", Kind: "veth", Peer: "p1", MTU: 1280, Master: "b5"},
			"p1": {Name: "p1", Kind: "veth", Peer: "p0", MTU: 1280}}},
	}
	r := kernelRunner(t, nil)
	converges(t, r, steps...)
}

// TestWalkFinding200AdoptedBridgeIPv6MTUWhenAPortJoins replays walk
// finding 200 as the soak found it (host soak seed 88101483153468, step 40,
// shrunk to 2 steps): someone else's bridge, adopted at 1500 with
// ipv6.mtu 1280, gains a vxlan port of 1280. The bridge, whose MTU nobody
// set since it was made, follows the port down and is set back.
func TestWalkFinding200AdoptedBridgeIPv6MTUWhenAPortJoins(t *testing.T) {
	bridge := func() *Link {
		return &Link{Name: AdoptLink, Kind: "bridge", MTU: 1500, Adopt: true, Sysctls: map[string]string{"ipv6.mtu": "1280"}}
	}
	steps := []*Config{
		{Protocol: 200, Links: map[string]*Link{AdoptLink: bridge()}},
		{Protocol: 200, Links: map[string]*Link{AdoptLink: bridge(),
			"x0": {Name: "x0", Kind: "vxlan", MTU: 1280, Master: AdoptLink, VXLAN: &VXLAN{ID: 42, Local: "10.9.0.1", Remote: "10.9.0.2"}}}},
	}
	r := kernelRunner(t, []string{"ip link add " + AdoptLink + " type bridge; ip link set " + AdoptLink + " up"})
	converges(t, r, steps...)
}

// TestWalkFinding200FollowerKeepsItsIPv6MTU: a macvlan without an MTU of
// its own follows its bridge, raised by the file, and the kernel sets the
// macvlan's net.ipv6.conf.LINK.mtu to its new MTU: the file's is written
// after the follow.
func TestWalkFinding200FollowerKeepsItsIPv6MTU(t *testing.T) {
	conf := func(mtu int) *Config {
		return &Config{Protocol: 200, Links: map[string]*Link{
			"b6": {Name: "b6", Kind: "bridge", MTU: mtu, Addrs: []*Addr{{CIDR: "10.76.6.1/24"}}},
			"m6": {Name: "m6", Kind: "macvlan", Parent: "b6", Mode: "bridge", Sysctls: map[string]string{"ipv6.mtu": "1280"}},
		}}
	}
	r := kernelRunner(t, nil)
	converges(t, r, conf(1400), conf(1500), conf(1450))
}

// TestWalkFinding200FollowerOfABridgeAPortPulledDown: a port of 1280 joins
// bridge b7 and pulls it down, with the macvlan on it; the bridge is set
// back at once, and the macvlan, which the file gives no MTU, follows it
// back after the ops: the kernel sets the macvlan's IPv6 MTU twice on the
// way, and the file's is written after.
func TestWalkFinding200FollowerOfABridgeAPortPulledDown(t *testing.T) {
	links := func() map[string]*Link {
		return map[string]*Link{
			"b7": {Name: "b7", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.76.7.1/24"}}},
			"m7": {Name: "m7", Kind: "macvlan", Parent: "b7", Mode: "bridge", Sysctls: map[string]string{"ipv6.mtu": "1300"}},
		}
	}
	port := links()
	port["p7"] = &Link{Name: "p7", Kind: "veth", Peer: "p8", MTU: 1280, Master: "b7"}
	port["p8"] = &Link{Name: "p8", Kind: "veth", Peer: "p7", MTU: 1280}
	r := kernelRunner(t, nil)
	converges(t, r, []*Config{{Protocol: 200, Links: links()}, {Protocol: 200, Links: port}}...)
}

// TestWalkFinding200KeysDroppedWhileAPortPullsTheBridgeDown: the file drops
// the ipv6.mtu of a bridge and of the macvlan on it in the apply in which
// a port of 1280 joins the bridge. The macvlan, lowered with the bridge,
// is set back after the ops: its key given back before then (the link's
// MTU after the plan, 1500) was above its MTU of the moment, which the
// kernel refuses; the give-back now runs after the pins.
func TestWalkFinding200KeysDroppedWhileAPortPullsTheBridgeDown(t *testing.T) {
	links := func(keys bool) map[string]*Link {
		ls := map[string]*Link{
			"b8": {Name: "b8", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.76.8.1/24"}}},
			"m8": {Name: "m8", Kind: "macvlan", Parent: "b8", Mode: "bridge"},
		}
		if keys {
			ls["b8"].Sysctls = map[string]string{"ipv6.mtu": "1300"}
			ls["m8"].Sysctls = map[string]string{"ipv6.mtu": "1290"}
		}
		return ls
	}
	port := links(false)
	port["p8"] = &Link{Name: "p8", Kind: "veth", Peer: "p9", MTU: 1280, Master: "b8"}
	port["p9"] = &Link{Name: "p9", Kind: "veth", Peer: "p8", MTU: 1280}
	r := kernelRunner(t, nil)
	converges(t, r, []*Config{{Protocol: 200, Links: links(true)}, {Protocol: 200, Links: port}}...)
}

// TestWalkFinding200MacvlansOnABridgeAPortPulledDown: a port of 1280 joins
// bridge b9, which follows it down with the macvlans on it, ours (declared
// at 1500 with ipv6.mtu 1400) and someone else's; the bridge is set back,
// and the kernel never raises a macvlan by itself: both are put back, with
// their keys.
func TestWalkFinding200MacvlansOnABridgeAPortPulledDown(t *testing.T) {
	links := func() map[string]*Link {
		return map[string]*Link{
			"b9": {Name: "b9", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.76.9.1/24"}}},
			"m9": {Name: "m9", Kind: "macvlan", Parent: "b9", Mode: "bridge", MTU: 1500, Sysctls: map[string]string{"ipv6.mtu": "1400"}},
		}
	}
	port := links()
	port["p9"] = &Link{Name: "p9", Kind: "veth", Peer: "q9", MTU: 1280, Master: "b9"}
	port["q9"] = &Link{Name: "q9", Kind: "veth", Peer: "p9", MTU: 1280}
	r := kernelRunner(t, nil)
	converges(t, r, []*Config{
		{Protocol: 200, Links: links()},
		{Protocol: 200, Links: links(), Meddled: true, Meddle: []string{"ip link add fm9 link b9 type macvlan mode bridge; sysctl -qw net.ipv6.conf.fm9.mtu=1300"}},
		{Protocol: 200, Links: port},
	}...)
	out, err := exec.Command("ip", "netns", "exec", r.ns, "sh", "-c", "cat /sys/class/net/fm9/mtu /proc/sys/net/ipv6/conf/fm9/mtu").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) != 2 || got[0] != "1500" || got[1] != "1300" {
		t.Errorf("someone else's fm9: mtu and ipv6 mtu %q, want 1500 and 1300, as before", got)
	}
}

// TestWalkFinding200PortBelowIPv6KeepsTheBridgesIPv6: a port of 1200 joins
// someone else's bridge, which follows its ports and would go below 1280
// with it, where the kernel takes IPv6 off the bridge: its address and
// its keys (they come back with default's). The bridge's MTU is marked as
// set before the join, so the kernel does not move it at all. (Its MAC is
// set, so that the port does not give it its own.)
func TestWalkFinding200PortBelowIPv6KeepsTheBridgesIPv6(t *testing.T) {
	r := kernelRunner(t, []string{"ip link add fbz type bridge; ip link add fpz type veth peer name fqz; ip link set fpz master fbz; " +
		"ip link set fpz up; ip link set fqz up; ip link set fbz address 02:00:00:00:00:01; ip link set fbz up; ip -6 addr add 2001:db8:7::1/64 dev fbz nodad; sysctl -qw net.ipv6.conf.fbz.accept_ra=0 net.ipv6.conf.fbz.mtu=1300"})
	converges(t, r, &Config{Protocol: 200, Links: map[string]*Link{
		"fbz": {Name: "fbz", Kind: "device"},
		"p7":  {Name: "p7", Kind: "veth", Peer: "q7", MTU: 1200, Master: "fbz"},
		"q7":  {Name: "q7", Kind: "veth", Peer: "p7", MTU: 1200},
	}})
	out, err := exec.Command("ip", "netns", "exec", r.ns, "sh", "-c",
		"cat /sys/class/net/fbz/mtu /proc/sys/net/ipv6/conf/fbz/accept_ra /proc/sys/net/ipv6/conf/fbz/mtu; ip -6 -o addr show dev fbz scope global").Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(out)); len(got) < 7 || got[0] != "1500" || got[1] != "0" || got[2] != "1300" || got[6] != "2001:db8:7::1/64" {
		t.Errorf("someone else's fbz after a port of 1200 joined: %q, want mtu 1500, accept_ra 0, ipv6 mtu 1300 and 2001:db8:7::1/64, as before", got)
	}
}
