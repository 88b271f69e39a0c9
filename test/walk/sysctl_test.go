package walk

import (
	"math/rand"
	"strings"
	"testing"
)

// TestGenSysctls: the generator declares global and per-link sysctls, adds,
// changes and drops them, and writes them where the schema wants them.
func TestGenSysctls(t *testing.T) {
	g, err := NewGen(rand.New(rand.NewSource(1)), Caps{}, Defects{}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	c := g.Initial()
	var global, perLink, dropped, v6, neigh int
	for i := 0; i < 300; i++ {
		var what string
		c, what = g.Next(c)
		if strings.Contains(what, "drop sysctl") {
			dropped++
		}
		y := c.YAML()
		if len(c.Sysctls) > 0 {
			global++
			if !strings.Contains(y, "\nsysctls: {") {
				t.Fatalf("global sysctls not at the top of the file:\n%s", y)
			}
		}
		for _, l := range c.Links {
			for k := range l.Sysctls {
				if strings.HasPrefix(k, "ipv6.") {
					v6++
					if !hasIPv6Conf(c, l) {
						t.Fatalf("IPv6 key %s on a %s, which may have no IPv6", k, l.Kind)
					}
				}
				if strings.Contains(k, ".neigh.") {
					neigh++
				}
			}
		}
		for _, l := range c.Links {
			if len(l.Sysctls) > 0 {
				perLink++
				if !strings.Contains(y, "sysctls: {ipv") {
					t.Fatalf("link sysctls not in the link:\n%s", y)
				}
				break
			}
		}
	}
	if global == 0 || perLink == 0 || dropped == 0 || v6 == 0 || neigh == 0 {
		t.Errorf("in 300 steps: %d with global sysctls, %d with per-link ones, %d drops, %d IPv6 keys, %d neighbour keys", global, perLink, dropped, v6, neigh)
	}
}

// TestLinkSysctlPath: the oracle reads a link's key where sysctl(8) shows
// it, with the dots of a vlan's name as slashes.
func TestLinkSysctlPath(t *testing.T) {
	for short, want := range map[string]string{
		"ipv4.rp_filter":           "net.ipv4.conf.eth0/100.rp_filter",
		"ipv6.accept_ra":           "net.ipv6.conf.eth0/100.accept_ra",
		"ipv4.neigh.ucast_solicit": "net.ipv4.neigh.eth0/100.ucast_solicit",
		"ipv6.neigh.mcast_solicit": "net.ipv6.neigh.eth0/100.mcast_solicit",
	} {
		if got := linkSysctlPath("eth0.100", short); got != want {
			t.Errorf("%s: %s, want %s", short, got, want)
		}
	}
}
