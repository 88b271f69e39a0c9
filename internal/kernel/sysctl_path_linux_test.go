package kernel

import (
	"path/filepath"
	"strings"
	"testing"
)

// No key names a file outside /proc/sys/net: "/" and "//" are "." and ".."
// once a key's dots and slashes are swapped, so net.//.kernel.core_pattern
// named /proc/sys/kernel/core_pattern. The ledger's sysctl records come
// from the state directory, which may be another user's.
func TestSysctlFileStaysUnderNet(t *testing.T) {
	for _, key := range []string{"net.//.kernel.core_pattern", "net.ipv4.conf.eth0.//.//.//.//.kernel.x", "net./.ipv4", "kernel.panic", "net..x", "net"} {
		if p, err := sysctlFile(key); err == nil {
			t.Errorf("sysctlFile(%q) = %s, want refused", key, p)
		}
	}
	for key, want := range map[string]string{
		"net.ipv4.ip_forward":              "/proc/sys/net/ipv4/ip_forward",
		"net.ipv4.conf.eth0/100.rp_filter": "/proc/sys/net/ipv4/conf/eth0.100/rp_filter",
		"net.ipv4.conf.a///b.rp_filter":    "/proc/sys/net/ipv4/conf/a...b/rp_filter",
		"net.ipv6.neigh.br-x.retrans_time": "/proc/sys/net/ipv6/neigh/br-x/retrans_time",
	} {
		p, err := sysctlFile(key)
		if err != nil || p != want || !strings.HasPrefix(filepath.Clean(p), "/proc/sys/net/") {
			t.Errorf("sysctlFile(%q) = %s, %v; want %s", key, p, err, want)
		}
	}
}
