package desired

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/model"
)

func TestSysctls(t *testing.T) {
	cfg, err := Parse([]Source{src("f.yaml", `version: 1
sysctls:
  net.ipv4.ip_forward: 1
  net.ipv6.conf.all.forwarding: "1"
  net.ipv4.ip_local_port_range: "32768    60999"
links:
  eth0.100:
    kind: device
    sysctls: {ipv4.rp_filter: 2, ipv6.disable_ipv6: 1, ipv4.neigh.base_reachable_time_ms: 15000}
`)})
	if err != nil {
		t.Fatal(err)
	}
	want := []model.Sysctl{
		{Key: "net.ipv4.conf.eth0/100.rp_filter", Value: "2", Link: "eth0.100", Origin: "f.yaml:9:15"},
		{Key: "net.ipv4.ip_forward", Value: "1", Origin: "f.yaml:3:3"},
		{Key: "net.ipv4.ip_local_port_range", Value: "32768 60999", Origin: "f.yaml:5:3"},
		{Key: "net.ipv4.neigh.eth0/100.base_reachable_time_ms", Value: "15000", Link: "eth0.100", Origin: "f.yaml:9:56"},
		{Key: "net.ipv6.conf.all.forwarding", Value: "1", Origin: "f.yaml:4:3"},
		{Key: "net.ipv6.conf.eth0/100.disable_ipv6", Value: "1", Link: "eth0.100", Origin: "f.yaml:9:34"},
	}
	if d := cmp.Diff(want, cfg.State.Sysctls); d != "" {
		t.Errorf("sysctls (-want +got):\n%s", d)
	}
	if got := model.SysctlPath(cfg.State.Sysctls[0].Key); got != "net/ipv4/conf/eth0.100/rp_filter" {
		t.Errorf("path of %s = %s", cfg.State.Sysctls[0].Key, got)
	}
}

func TestSysctlErrors(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{{
		name: "not under net",
		file: "version: 1\nsysctls:\n  kernel.panic: 10\n",
		want: `f.yaml:3:3: sysctls.kernel.panic: only keys under net. are supported (those of the network namespace); found "kernel.panic"`,
	}, {
		name: "bad key",
		file: "version: 1\nsysctls:\n  net..ip_forward: 1\n  net.ipv4.ip forward: 1\n",
		want: "f.yaml:3:3: sysctls.net..ip_forward: not a sysctl key; expected letters, digits, '_', '-', '/', ':', '@' and '+', in non-empty parts separated by dots, no part \"/\" or \"//\", such as net.ipv4.ip_forward\n" +
			"f.yaml:4:3: sysctls.net.ipv4.ip forward: not a sysctl key; expected letters, digits, '_', '-', '/', ':', '@' and '+', in non-empty parts separated by dots, no part \"/\" or \"//\", such as net.ipv4.ip_forward",
	}, {
		// "/" and "//" are "." and ".." in the key's path: these would
		// write /proc/sys/kernel/core_pattern.
		name: "a key that leaves net",
		file: "version: 1\nsysctls:\n  net.//.kernel.core_pattern: x\nlinks:\n  br0: {kind: bridge, sysctls: {ipv4.//.//.//.//.kernel.core_pattern: x}}\n",
		want: "f.yaml:3:3: sysctls.net.//.kernel.core_pattern: not a sysctl key; expected letters, digits, '_', '-', '/', ':', '@' and '+', in non-empty parts separated by dots, no part \"/\" or \"//\", such as net.ipv4.ip_forward\n" +
			"f.yaml:5:33: links.br0.sysctls.ipv4.//.//.//.//.kernel.core_pattern: expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.br0.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found \"ipv4.//.//.//.//.kernel.core_pattern\"",
	}, {
		name: "per-link key at the top",
		file: "version: 1\nsysctls:\n  net.ipv4.conf.eth0.rp_filter: 2\n  net.ipv4.conf.all.rp_filter: 2\n",
		want: "f.yaml:3:3: sysctls.net.ipv4.conf.eth0.rp_filter: a key of link eth0: declare it under links.eth0.sysctls as ipv4.rp_filter (kind device for a link netreconcile does not create)",
	}, {
		name: "values",
		file: "version: 1\nsysctls:\n  net.ipv4.ip_forward: true\n  net.ipv4.tcp_syncookies: 0x1\n  net.ipv4.tcp_ecn: ~\n  net.ipv4.tcp_fin_timeout: [1]\n  net.ipv4.tcp_rmem: \"  \"\n  net.ipv4.tcp_sack: 01\n",
		want: "f.yaml:3:24: sysctls.net.ipv4.ip_forward: expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found \"true\"\n" +
			"f.yaml:4:28: sysctls.net.ipv4.tcp_syncookies: expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found \"0x1\"\n" +
			"f.yaml:5:21: sysctls.net.ipv4.tcp_ecn: expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found nothing\n" +
			"f.yaml:6:29: sysctls.net.ipv4.tcp_fin_timeout: expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found a list\n" +
			"f.yaml:7:22: sysctls.net.ipv4.tcp_rmem: expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found \"  \"\n" +
			"f.yaml:8:22: sysctls.net.ipv4.tcp_sack: expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found \"01\"",
	}, {
		name: "not a mapping",
		file: "version: 1\nsysctls: [net.ipv4.ip_forward=1]\n",
		want: "f.yaml:2:10: sysctls: expected a mapping of keys to values (such as {net.ipv4.ip_forward: 1}), found a list",
	}, {
		name: "twice",
		file: "version: 1\nsysctls:\n  net.ipv4.ip_forward: 1\n  net.ipv4.ip_forward: 0\n",
		want: "f.yaml:4:3: sysctls.net.ipv4.ip_forward: key given twice",
	}, {
		name: "IPv6 disabled with IPv6 addresses",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, addresses: [10.0.0.1/24, \"fd00::1/64\"], sysctls: {ipv6.disable_ipv6: 1}}\n  br1: {kind: bridge, addresses: [10.0.1.1/24], sysctls: {ipv6.disable_ipv6: 1}}\n",
		want: "f.yaml:3:73: links.br0.sysctls.ipv6.disable_ipv6: the link declares IPv6 address fd00::1/64, which the kernel refuses on a link with IPv6 disabled; remove one or the other",
	}, {
		// The walk's host seed of make test-walk, step 37: apply failed
		// with EPERM ("IPv6 support disabled by administrator").
		name: "IPv6 disabled under an IPv6 vxlan",
		file: "version: 1\nlinks:\n  br0: {kind: bridge, sysctls: {ipv6.disable_ipv6: 1}}\n  x1: {kind: vxlan, vxlan: {id: 20, local: \"2001:db8::4\", remote: \"2001:db8::5\", dev: br0}}\n  x2: {kind: vxlan, vxlan: {id: 21, local: 10.0.0.1, remote: 10.0.0.2, dev: br0}}\n",
		want: "f.yaml:3:33: links.br0.sysctls.ipv6.disable_ipv6: disables IPv6 on br0, which vxlan x1 runs over IPv6 on (dev); the kernel refuses to make the vxlan then; remove one or the other",
	}, {
		name: "one parameter under two names",
		file: "version: 1\nsysctls:\n  net.ipv4.ip_forward: 1\n  net.ipv4.conf.all.forwarding: 1\n",
		want: "f.yaml:4:3: sysctls.net.ipv4.conf.all.forwarding: net.ipv4.ip_forward and net.ipv4.conf.all.forwarding are one parameter (first declared at f.yaml:3:3); declare one",
	}, {
		name: "link keys",
		file: "version: 1\nlinks:\n  br0:\n    kind: bridge\n    sysctls: {rp_filter: 2, ipv4.: 1, ipv5.x: 1, ipv6.neigh.: 1, net.ipv4.conf.br0.rp_filter: 1}\n",
		want: "f.yaml:5:15: links.br0.sysctls.rp_filter: expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.br0.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found \"rp_filter\"\n" +
			"f.yaml:5:29: links.br0.sysctls.ipv4.: expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.br0.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found \"ipv4.\"\n" +
			"f.yaml:5:39: links.br0.sysctls.ipv5.x: expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.br0.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found \"ipv5.x\"\n" +
			"f.yaml:5:50: links.br0.sysctls.ipv6.neigh.: expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.br0.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found \"ipv6.neigh.\"\n" +
			"f.yaml:5:66: links.br0.sysctls.net.ipv4.conf.br0.rp_filter: expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.br0.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found \"net.ipv4.conf.br0.rp_filter\"",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(t, src("f.yaml", tc.file)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// TestSysctlsAcrossFragments: a key declared by two fragments is an error
// at the second, naming the first.
func TestSysctlsAcrossFragments(t *testing.T) {
	got := errorsOf(t, src("main.yaml", "version: 1\nsysctls: {net.ipv4.ip_forward: 1}\n"), src("d/10.yaml", "version: 1\nsysctls:\n  net.ipv4.ip_forward: 0\n"))
	want := "d/10.yaml:3:3: sysctls.net.ipv4.ip_forward: net.ipv4.ip_forward is declared twice (first at main.yaml:2:11)"
	if got != want {
		t.Errorf("errors:\n%s\nwant:\n%s", got, want)
	}
}
