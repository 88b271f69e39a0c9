package walk

import "testing"

// TestWalkFinding184SuppressPrefixLengthKeepsARuleClearOfAClash replays
// walk finding 184 (host soak seed 82092114250345, step 12, shrunk to 2
// steps) on this kernel: someone else's rule 1000 from 192.168.9.0/24
// lookup 200 clashes with the file's rule 1000 lookup 200, which the plan
// leaves out as a conflict; given suppress_prefixlength 32 it no longer
// clashes (the kernel's rule_exists compares suppress_prefixlength exactly),
// and apply makes it. The oracle took it for still in conflict and the rule
// in the kernel for one the file does not hold.
func TestWalkFinding184SuppressPrefixLengthKeepsARuleClearOfAClash(t *testing.T) {
	conf := func(suppress bool) *Config {
		return &Config{Protocol: 200,
			Links: map[string]*Link{},
			Rules: []*Rule{{Priority: 1000, Family: "ipv4", Action: "lookup", Table: "200", Suppress: 32, HasSuppress: suppress}},
		}
	}
	r := kernelRunner(t, []string{"ip rule add priority 1000 from 192.168.9.0/24 lookup 200 proto static"})
	// The comparison of rules is under test, not the oracle's proof of
	// each key: a mutant of a rule held back by a conflict (not: true)
	// stays held back, and proves nothing.
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range []*Config{conf(false), conf(true), conf(false)} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
	}
}

// TestWalkFinding63PoolOverADroppedStaticAddressIsNew: a pool declared in
// the step in which a link taking from it drops a static address of its
// subnet was taken for a lost registry, and diff and apply refused the file
// alike (walk finding 63; the generator makes that shape since links get
// static addresses among a pool subnet's first ones: walk finding 186, host
// seed 79831351474037, step 13, shrunk to 2 steps). The address was the
// file's, added by netreconcile: the pool is new, and takes it as its first
// allocation. The file's static address back, and the pool again (its
// registry there now), are plain steps too.
func TestWalkFinding63PoolOverADroppedStaticAddressIsNew(t *testing.T) {
	static := &Config{Protocol: 200, Links: map[string]*Link{
		"b1": {Name: "b1", Kind: "bridge", MTU: 1500, Addrs: []*Addr{{CIDR: "10.99.0.0/24"}}},
	}}
	pooled := &Config{Protocol: 200,
		Pools: []*Pool{{Name: "pw", Subnet: "10.99.0.0/24", Bits: 2, Table: 120, Delay: "0s"}},
		Links: map[string]*Link{"b1": {Name: "b1", Kind: "bridge", MTU: 1500, Addrs: []*Addr{{Pool: "pw", PrefixLen: 24}}}},
	}
	// lo up: the export routes of the pool go there.
	r := kernelRunner(t, []string{"ip link set lo up"})
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range []*Config{static, pooled, static, pooled} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
		if r.refused {
			t.Errorf("step %d: refused", i+1)
		}
	}
}

// TestWalkFinding189AdoptedLinkKeepsItsKeysOnceNoLongerAdopted replays walk
// finding 189 (host soak seeds 109351684200297, step 55, shrunk to 7 steps,
// and 12315378314619, step 53): the link the walk adopts is someone else's
// bridge with an IPv4 address, which marks every IPv4 key of it as written,
// so a write of net.ipv4.conf.default.rp_filter leaves its rp_filter as it
// was. Adopted, the oracle skipped that key; once the file dropped adopt
// (the link is the file's, and the key still not), it wanted default's
// value, which nothing writes.
func TestWalkFinding189AdoptedLinkKeepsItsKeysOnceNoLongerAdopted(t *testing.T) {
	conf := func(adopt bool) *Config {
		return &Config{Protocol: 200,
			Sysctls: map[string]string{"net.ipv4.conf.default.rp_filter": "1"},
			Links: map[string]*Link{
				AdoptLink: {Name: AdoptLink, Kind: "bridge", MTU: 1500, Adopt: adopt, Addrs: []*Addr{{CIDR: "10.252.0.1/24"}}},
			},
		}
	}
	r := kernelRunner(t, []string{"ip link add " + AdoptLink + " type bridge; ip link set " + AdoptLink + " up; ip addr add 10.252.0.1/24 dev " + AdoptLink})
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range []*Config{conf(true), conf(false)} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
	}
}

// Walk finding 196 (host seed 42965663619505, step 31, shrunk to 4 steps):
// a bridge of ours that the file dropped stayed in the kernel (its delete
// waits for a port someone else gave it), and the file wrote default's
// rp_filter meanwhile, so netreconcile wrote the bridge's own value back.
// Declared again without the key, the bridge keeps that value, which the
// oracle took for default's. An oracle bug: the oracle now leaves such a
// link's spread keys alone.
func TestWalkFinding196LinkLeftUndeclaredKeepsItsKeysAfterADefaultWrite(t *testing.T) {
	bridge := func() map[string]*Link {
		return map[string]*Link{"b1": {Name: "b1", Kind: "bridge", MTU: 1500, Addrs: []*Addr{{CIDR: "10.88.1.3/24"}}}}
	}
	dflt := map[string]string{"net.ipv4.conf.default.rp_filter": "1"}
	r := kernelRunner(t, nil)
	for k := range oracleChecks {
		r.proven[k] = true
	}
	for i, c := range []*Config{
		{Protocol: 200, Links: bridge()},
		{Protocol: 200, Sysctls: dflt, Links: map[string]*Link{}, Meddled: true,
			Meddle: []string{"ip link add fcp6a type veth peer name fcp6b; ip link set fcp6a master b1"}},
		{Protocol: 200, Sysctls: dflt, Links: bridge()},
	} {
		if f := r.step(i, c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
	}
	if !r.pinned["b1"] {
		t.Error("b1 was not noted as pinned")
	}
}

// TestWalkFinding204HeldPoolAddressStaysOnItsLink replays walk finding 204
// (host soak seed 124038022870303, step 15, shrunk to 2 steps): the file
// moves a pool address from /120 to the default /128 under max-disruption
// in-place. IPv6 knows the address by the address alone, so the change is
// a replace (readded), which the service's pass holds back; its give-back
// of the pool's addresses deleted the /120 all the same.
func TestWalkFinding204HeldPoolAddressStaysOnItsLink(t *testing.T) {
	pool := &Pool{Name: "pd", Subnet: "10.98.0.0/24", Subnet6: "fd98::/120", Table: 120, Delay: "0s"}
	conf := func(len6 int) *Config {
		return &Config{Protocol: 250, MaxDisruption: "in-place", Pools: []*Pool{pool}, Links: map[string]*Link{
			"b2": {Name: "b2", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.98.0.2/24"}, {Pool: "pd", PrefixLen6: len6}}},
		}}
	}
	converges(t, kernelRunner(t, []string{"ip link set lo up"}), conf(120), conf(0))
}

// TestWalkFinding205AddressWaitsForItsSubnetsHeldScope: under
// max-disruption in-place the scope change of 10.1.0.1/24 (a delete and an
// add: readded) is held, and the subnet keeps scope global in the kernel;
// 10.1.0.2/24, new in scope link, was created beside it and refused
// (EINVAL), failing the service's pass. Found by reading the fix of 204.
func TestWalkFinding205AddressWaitsForItsSubnetsHeldScope(t *testing.T) {
	conf := func(max, scope string, addrs ...string) *Config {
		l := &Link{Name: "b2", Kind: "bridge"}
		for _, a := range addrs {
			l.Addrs = append(l.Addrs, &Addr{CIDR: a, Scope: scope})
		}
		return &Config{Protocol: 250, MaxDisruption: max, Links: map[string]*Link{"b2": l}}
	}
	converges(t, kernelRunner(t, nil), conf("", "", "10.1.0.1/24"), conf("in-place", "link", "10.1.0.1/24", "10.1.0.2/24"))
}

// TestWalkFinding206RouteWaitsForItsGatewaysHeldAddress: under
// max-disruption in-place the file drops noprefixroute from 10.5.0.1/24
// (an IPv4 address replaced: readded) and adds a route via 10.5.0.254,
// which only the prefix route of the new form reaches. The address is
// held without its prefix route, and the kernel refused the route
// ("Nexthop has invalid gateway"), failing the service's pass. Found by
// reading for the class of 204 and 205.
func TestWalkFinding206RouteWaitsForItsGatewaysHeldAddress(t *testing.T) {
	conf := func(max string, noPrefix bool, routes ...*Route) *Config {
		return &Config{Protocol: 250, MaxDisruption: max, Routes: routes, Links: map[string]*Link{
			"b2": {Name: "b2", Kind: "bridge", Addrs: []*Addr{{CIDR: "10.5.0.1/24", NoPrefixRoute: noPrefix}}},
		}}
	}
	converges(t, kernelRunner(t, nil), conf("", true), conf("in-place", false, &Route{To: "10.99.0.0/24", Via: "10.5.0.254", Dev: "b2"}))
}

// TestWalkFinding207RouteWaitsForItsSourceThatWaits: under max-disruption
// in-place, 10.1.0.2/24 waits with the held scope change of 10.1.0.1/24
// (205), and a route from it was written all the same: the kernel refused
// it ("Invalid prefsrc address"), failing the service's pass. Found by
// reading the fix of 205.
func TestWalkFinding207RouteWaitsForItsSourceThatWaits(t *testing.T) {
	conf := func(max, scope string, routes []*Route, addrs ...string) *Config {
		l := &Link{Name: "b2", Kind: "bridge"}
		for _, a := range addrs {
			l.Addrs = append(l.Addrs, &Addr{CIDR: a, Scope: scope})
		}
		return &Config{Protocol: 250, MaxDisruption: max, Routes: routes, Links: map[string]*Link{"b2": l}}
	}
	routes := []*Route{{To: "10.99.0.0/24", Dev: "b2", Src: "10.1.0.2"}}
	converges(t, kernelRunner(t, nil), conf("", "", nil, "10.1.0.1/24"), conf("in-place", "link", routes, "10.1.0.1/24", "10.1.0.2/24"))
}

// TestWalkFinding208RouteMTUStaysWithALinkMTUThatWaits: under
// max-disruption in-place the recreate of macvlan m1 (into passthru) is
// held, so the MTU write of its parent b1 (1500 to 1280) waits: the kernel
// would lower m1 with it. The IPv6 route through b1 with mtu 1300 was
// written again as if the kernel had moved its MTU with b1's, on every
// pass: the service's second pass wrote it again. Found by reading for the
// class of 204 and 205.
func TestWalkFinding208RouteMTUStaysWithALinkMTUThatWaits(t *testing.T) {
	conf := func(max string, mtu int, mode string) *Config {
		return &Config{Protocol: 250, MaxDisruption: max, Links: map[string]*Link{
			"b1": {Name: "b1", Kind: "bridge", MTU: mtu},
			"m1": {Name: "m1", Kind: "macvlan", Parent: "b1", Mode: mode},
		}, Routes: []*Route{{To: "2001:db8:1::/64", Dev: "b1", MTU: 1300}}}
	}
	converges(t, kernelRunner(t, nil), conf("", 1500, "bridge"), conf("in-place", 1280, "passthru"))
}

// TestWalkFinding210IPv6MTUKeyWithALinkMTUThatWaits: under max-disruption
// in-place the recreate of macvlan m1 (into passthru) is held, so the MTU
// write of its parent v1 (1500 to 1400) waits. The file turns v1's IPv6
// back on, and the kernel sets its ipv6.mtu to the MTU v1 keeps, 1500; the
// plan took the file's 1400 for it, wrote nothing after, and the service's
// second pass wrote the key again. Found by reading for the class of 204.
func TestWalkFinding210IPv6MTUKeyWithALinkMTUThatWaits(t *testing.T) {
	conf := func(max string, mtu int, mode string, keys map[string]string) *Config {
		return &Config{Protocol: 250, MaxDisruption: max, Links: map[string]*Link{
			"v1": {Name: "v1", Kind: "veth", Peer: "v2", MTU: mtu, Sysctls: keys},
			"v2": {Name: "v2", Kind: "veth", Peer: "v1"},
			"m1": {Name: "m1", Kind: "macvlan", Parent: "v1", Mode: mode},
		}}
	}
	converges(t, kernelRunner(t, nil),
		conf("", 1500, "bridge", map[string]string{"ipv6.disable_ipv6": "1", "ipv6.mtu": "1400"}),
		conf("in-place", 1400, "passthru", map[string]string{"ipv6.disable_ipv6": "0", "ipv6.mtu": "1400"}))
}

// TestWalkFinding213LeftOutLinkKeepsItsParentClaim replays walk finding
// 213 (host soak seed 48890979181009, step 65, shrunk to 25 steps): m1
// moves from b3 to someone else's bridge fb0, which leaves it out, while
// m0 on b3 goes into passthru, which the kernel makes only as the sole
// macvlan on its parent. The plan deleted m1 anyway (the first half of its
// move) to make room for m0, and a rule naming m1 was left holding its
// old index.
func TestWalkFinding213LeftOutLinkKeepsItsParentClaim(t *testing.T) {
	conf := func(m0mode, m1parent string) *Config {
		c := &Config{Protocol: 250, Links: map[string]*Link{
			"b3": {Name: "b3", Kind: "bridge"},
			"m0": {Name: "m0", Kind: "macvlan", Parent: "b3", Mode: m0mode},
			"m1": {Name: "m1", Kind: "macvlan", Parent: m1parent},
		}, Tables: []*Table{{Family: "netdev", Name: "nrw5", Chains: []*Chain{{Name: "helper", Rules: []string{`iif { "m1", "lo" } counter accept`}}}}}}
		if m1parent == "fb0" {
			c.Links["fb0"] = &Link{Name: "fb0", Kind: "bridge"}
		}
		return c
	}
	converges(t, kernelRunner(t, []string{"ip link add fb0 type bridge"}), conf("private", "b3"), conf("passthru", "fb0"))
}
