package walk

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

// kernelOf reads links as `ip -j -d link` prints them.
func kernelOf(t *testing.T, links string) *Kernel {
	t.Helper()
	var ls []*kLink
	if err := json.Unmarshal([]byte(links), &ls); err != nil {
		t.Fatal(err)
	}
	k := &Kernel{Links: map[string]*kLink{}}
	for _, l := range ls {
		k.Links[l.Name] = l
	}
	return k
}

// TestWalkFinding103KeptBelowIPv6 holds the walk's judgement of a link the
// kernel keeps below IPv6's minimum MTU to the kernel's rules: a link of
// ours that the file gives no MTU keeps the kernel's, whatever the file's
// other links say; one the file gives an MTU, or that the step recreates
// (another kind, VNI or peer), or someone else's, is not judged so.
func TestWalkFinding103KeptBelowIPv6(t *testing.T) {
	k := kernelOf(t, `[
	 {"ifname":"k1","mtu":1200,"ifalias":"netreconcile: walk link","linkinfo":{"info_kind":"bridge"}},
	 {"ifname":"x1","mtu":1210,"ifalias":"netreconcile","linkinfo":{"info_kind":"vxlan","info_data":{"id":20}}},
	 {"ifname":"x2","mtu":1210,"ifalias":"netreconcile","linkinfo":{"info_kind":"vxlan","info_data":{"id":21}}},
	 {"ifname":"v0","mtu":1000,"link":"v1","ifalias":"netreconcile","linkinfo":{"info_kind":"veth"}},
	 {"ifname":"v2","mtu":1000,"link":"v3","ifalias":"netreconcile","linkinfo":{"info_kind":"veth"}},
	 {"ifname":"f0","mtu":1000,"linkinfo":{"info_kind":"bridge"}},
	 {"ifname":"b2","mtu":1500,"ifalias":"netreconcile","linkinfo":{"info_kind":"bridge"}}]`)
	c := &Config{Links: map[string]*Link{
		"k1": {Name: "k1", Kind: "bridge", Sysctls: map[string]string{"ipv6.hop_limit": "64"}},
		"x1": {Name: "x1", Kind: "vxlan", VXLAN: &VXLAN{ID: 20, Dev: "b2"}, Addrs: []*Addr{{CIDR: "fd00::1/64"}}},
		"x2": {Name: "x2", Kind: "vxlan", VXLAN: &VXLAN{ID: 22}},
		"v0": {Name: "v0", Kind: "veth", Peer: "v1"},
		"v2": {Name: "v2", Kind: "veth", Peer: "v4"},
		"f0": {Name: "f0", Kind: "bridge"},
		"b2": {Name: "b2", Kind: "bridge", MTU: 1500},
	}, Routes: []*Route{{To: "2001:db8::/48", Dev: "v0"}}}
	got := keptBelowIPv6(c, k)
	// x1 sits on b2 without an MTU: at b2's, less the encapsulation, it is
	// kept low only with b2.
	if want := map[string]int{"k1": 1200, "v0": 1000}; !maps.Equal(got, want) {
		t.Errorf("kept below 1280: %v, want %v", got, want)
	}
	c.Links["v0"].MTU = 1400
	if _, ok := keptBelowIPv6(c, k)["v0"]; ok {
		t.Errorf("v0, given an MTU of 1400, is judged kept below 1280")
	}
	for n, want := range map[string]bool{"k1": true, "x1": true, "v0": true, "x2": false, "f0": false} {
		if got := wantsIPv6(c, n); got != want {
			t.Errorf("wantsIPv6(%s) = %v, want %v", n, got, want)
		}
	}
	// A vxlan up joins its IPv6 group on its device.
	c.Links["x3"] = &Link{Name: "x3", Kind: "vxlan", VXLAN: &VXLAN{ID: 23, Group: "ff05::100", Dev: "f0"}}
	if !wantsIPv6(c, "f0") {
		t.Errorf("f0, the device of vxlan x3's IPv6 group, is taken to need no IPv6")
	}
	c.Links["x3"].Down = true
	if wantsIPv6(c, "f0") {
		t.Errorf("f0 is taken to need IPv6 for vxlan x3, which is down")
	}
	delete(c.Links, "x3")
	c.KeptLow = map[string]int{"k1": 1200}
	if !belowIPv6(c, "k1") || hasIPv6Conf(c, c.Links["k1"]) {
		t.Errorf("k1, which the kernel keeps at 1200, is taken to have IPv6")
	}
}

// TestWalkFinding103AgreeLowRefusal: a refusal of IPv6 on links kept below
// 1280 agrees with the walk only where it names links the walk judged so,
// at their MTUs.
func TestWalkFinding103AgreeLowRefusal(t *testing.T) {
	msg := func(links ...string) string {
		var b strings.Builder
		b.WriteString("netreconcile diff: 1 link(s) " + ipv6KeptRefusal + ": ")
		for _, l := range links {
			b.WriteString("link " + l + ", below 1280, IPv6's minimum; ")
		}
		return b.String()
	}
	low := map[string]int{"k1": 1200, "x1": 1210}
	for _, c := range []struct {
		errs string
		ok   bool
	}{
		{msg("k1 has no IPv6: the kernel holds it at MTU 1200,"), true},
		{msg("k1 has no IPv6: the kernel holds it at MTU 1200,", "x1 has no IPv6: the kernel holds it at MTU 1210,"), true},
		{msg("k1 has no IPv6: the kernel holds it at MTU 1000,"), false},
		{msg("v0 has no IPv6: the kernel holds it at MTU 1200,"), false},
		{msg(), false},
	} {
		if err := agreeLowRefusal(c.errs, low); (err == nil) != c.ok {
			t.Errorf("agreeLowRefusal(%q) = %v, want ok %v", c.errs, err, c.ok)
		}
	}
}
