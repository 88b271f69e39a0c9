package daemon_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestRepairsSysctlDrift: the kernel sends no notification when a sysctl
// changes, so drift is repaired by the periodic resync (a pass that reads
// every declared key), not by an event.
func TestRepairsSysctlDrift(t *testing.T) {
	t.Parallel()
	ns := nettest.NewNetNSPrefixed(t, "sys")
	nettest.InNS(t, ns, "sysctl", "-qw", "net.ipv4.ip_forward=0")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "netreconcile.yaml")
	writeInPlace(t, cfg, "version: 1\nsysctls: {net.ipv4.ip_forward: 1}\nlinks:\n  sysd0: {kind: bridge, sysctls: {ipv4.rp_filter: 2}}\n")
	p := startDaemon(t, ns, cfg, filepath.Join(dir, "state"), nil, "--resync-interval", "1s")
	p.waitMsg(0, "READY=1", startDeadline)
	get := func(key string) string { return strings.TrimSpace(nettest.InNS(t, ns, "sysctl", "-n", key)) }
	if get("net.ipv4.ip_forward") != "1" || get("net.ipv4.conf.sysd0.rp_filter") != "2" {
		t.Fatalf("after READY=1: ip_forward %s, sysd0 rp_filter %s", get("net.ipv4.ip_forward"), get("net.ipv4.conf.sysd0.rp_filter"))
	}
	p.settle()
	nettest.InNS(t, ns, "sysctl", "-qw", "net.ipv4.ip_forward=0", "net.ipv4.conf.sysd0.rp_filter=0")
	eventually(t, 5*time.Second, "sysctl drift repaired by the resync", func() bool {
		return get("net.ipv4.ip_forward") == "1" && get("net.ipv4.conf.sysd0.rp_filter") == "2"
	})
}

// TestSysctlWhenLinkAppears: a per-link key of a device link that does not
// exist yet is set when the link appears (its notification wakes a pass; the
// resync is an hour away).
func TestSysctlWhenLinkAppears(t *testing.T) {
	t.Parallel()
	ns := nettest.NewNetNSPrefixed(t, "sys")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "netreconcile.yaml")
	writeInPlace(t, cfg, "version: 1\nlinks:\n  sysh0: {kind: device, sysctls: {ipv4.rp_filter: 2, ipv4.proxy_arp: 1}}\n")
	p := startDaemon(t, ns, cfg, filepath.Join(dir, "state"), nil, "--resync-interval", "1h")
	// Not converged (READY=1 waits for that): the device is missing.
	p.waitMsg(0, "STATUS=", startDeadline)
	p.settle()
	nettest.IP(t, ns, "link", "add", "sysh0", "type", "veth", "peer", "name", "sysh1")
	get := func(key string) string { return strings.TrimSpace(nettest.InNS(t, ns, "sysctl", "-n", key)) }
	eventually(t, 5*time.Second, "the keys of a link that appeared", func() bool {
		return get("net.ipv4.conf.sysh0.rp_filter") == "2" && get("net.ipv4.conf.sysh0.proxy_arp") == "1"
	})
	if got := get("net.ipv4.conf.sysh1.proxy_arp"); got != "0" {
		t.Errorf("the peer's proxy_arp is %s: a link the file does not name was written", got)
	}
}
