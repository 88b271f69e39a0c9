package actual

import (
	"slices"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// TestWalkFinding168OwnedLinkKeysReadTheirDefault: a link's key the ledger
// owns and the file no longer declares goes back, on a link netreconcile
// made, to default's value (diff.sysctlBack), so the read covers default's
// key too, not only that of a declared key. Without it the plan fell back
// to the value recorded when the key was first written, which a
// family-wide key written since had made stale (host walk seed
// 128820325505437, step 79).
func TestWalkFinding168OwnedLinkKeysReadTheirDefault(t *testing.T) {
	got := SysctlKeys([]model.Sysctl{{Key: "net.ipv4.conf.v0.rp_filter", Value: "1", Link: "v0"}},
		map[string]string{"net.ipv6.conf.p0c.ignore_routes_with_linkdown": "1", "net.ipv6.neigh.p0c.mcast_solicit": "3", "net.ipv4.ip_forward": "0"})
	want := []string{"net.ipv4.conf.default.rp_filter", "net.ipv4.conf.v0.rp_filter", "net.ipv4.ip_forward",
		"net.ipv6.conf.default.ignore_routes_with_linkdown", "net.ipv6.conf.p0c.ignore_routes_with_linkdown",
		"net.ipv6.neigh.lo.mcast_solicit", "net.ipv6.neigh.p0c.mcast_solicit"}
	if !slices.Equal(got, want) {
		t.Errorf("SysctlKeys:\n got %q\nwant %q", got, want)
	}
}
