package kernel_test

import (
	"errors"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// TestSysctlsInNamespace: reads and writes reach the target namespace's
// /proc/sys/net (checked with sysctl(8) there), not the caller's; a key
// the kernel lacks is left out of a read and ErrNotFound on a write.
func TestSysctlsInNamespace(t *testing.T) {
	nettest.SkipIfShort(t)
	ns := nettest.NewNetNSPrefixed(t, "sys")
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	host := nettest.Exec(t, "sysctl", "-n", "net.ipv4.ip_local_port_range")
	if err := k.SetSysctl("net.ipv4.ip_local_port_range", "20001 40001"); err != nil {
		t.Fatal(err)
	}
	if got := nettest.InNS(t, ns, "sysctl", "-n", "net.ipv4.ip_local_port_range"); got != "20001\t40001\n" {
		t.Errorf("in the namespace: %q", got)
	}
	if got := nettest.Exec(t, "sysctl", "-n", "net.ipv4.ip_local_port_range"); got != host {
		t.Fatalf("the host's value changed: %q, was %q", got, host)
	}
	vals, err := k.Sysctls([]string{"net.ipv4.ip_local_port_range", "net.ipv4.no_such_key", "net.ipv4.conf.lo.rp_filter"})
	if err != nil {
		t.Fatal(err)
	}
	if len(vals) != 2 || vals["net.ipv4.ip_local_port_range"] != "20001\t40001" {
		t.Errorf("read %q", vals)
	}
	if err := k.SetSysctl("net.ipv4.no_such_key", "1"); err == nil || !errors.Is(err, kernel.ErrNotFound) {
		t.Errorf("write of a missing key: %v", err)
	}
}

// BenchmarkSysctls measures a pass's read of 20 keys in a namespace (one
// switch of the thread for them all).
func BenchmarkSysctls(b *testing.B) {
	ns := nettest.NewNetNSPrefixed(b, "sys")
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		b.Fatal(err)
	}
	defer k.Close()
	var keys []string
	for _, c := range []string{"rp_filter", "accept_local", "proxy_arp", "arp_ignore", "promote_secondaries"} {
		for _, l := range []string{"all", "default", "lo"} {
			keys = append(keys, "net.ipv4.conf."+l+"."+c)
		}
	}
	keys = append(keys, "net.ipv4.ip_forward", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.core.somaxconn", "net.ipv6.conf.all.forwarding")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := k.Sysctls(keys); err != nil {
			b.Fatal(err)
		}
	}
}
