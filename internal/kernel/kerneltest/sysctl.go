package kerneltest

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// defaultSysctls are the parameters the fake offers, with the values a
// fresh namespace of a 6.x kernel shows. Every link has the keys of
// "default" (net.ipv4.conf.default.X gives net.ipv4.conf.LINK.X), with
// its values when the link is made (newLinkSysctls); "all" is a key of its
// own.
var defaultSysctls = func() map[string]string {
	m := map[string]string{
		"net.ipv4.ip_forward":                "0",
		"net.ipv4.ip_local_port_range":       "32768\t60999",
		"net.ipv4.tcp_syncookies":            "1",
		"net.ipv4.ip_nonlocal_bind":          "0",
		"net.core.somaxconn":                 "4096",
		"net.ipv6.ip_nonlocal_bind":          "0",
		"net.ipv4.fib_multipath_hash_policy": "0",
	}
	conf4 := map[string]string{"forwarding": "0", "rp_filter": "0", "accept_local": "0", "proxy_arp": "0",
		"promote_secondaries": "0", "arp_ignore": "0", "arp_announce": "0", "send_redirects": "1", "accept_redirects": "1"}
	conf6 := map[string]string{"forwarding": "0", "disable_ipv6": "0", "accept_ra": "1", "autoconf": "1", "accept_dad": "1", "proxy_ndp": "0", "hop_limit": "64", "mtu": "1280",
		"addr_gen_mode": "0", "ignore_routes_with_linkdown": "0", "force_forwarding": "0"}
	neigh := map[string]string{"base_reachable_time_ms": "30000", "gc_stale_time": "60", "ucast_solicit": "3", "mcast_solicit": "3", "retrans_time_ms": "1000"}
	for _, w := range []string{"all", "default"} {
		for k, v := range conf4 {
			m["net.ipv4.conf."+w+"."+k] = v
		}
		for k, v := range conf6 {
			m["net.ipv6.conf."+w+"."+k] = v
		}
	}
	for k, v := range neigh {
		m["net.ipv4.neigh.default."+k] = v
		m["net.ipv6.neigh.default."+k] = v
	}
	return m
}()

// newLinkSysctls gives a new link (by ifindex) the values "default" has
// now: the kernel copies them at creation, and a later change of "default"
// does not reach the link (measured on 6.18, IPv4 and IPv6 alike; the
// contract suite holds it). Called locked.
func (f *Kernel) newLinkSysctls(index int) {
	m := map[string]string{}
	for k, v := range f.sysctls {
		if p := strings.SplitN(k, ".", 5); len(p) == 5 && p[3] == "default" && (p[2] == "conf" || p[2] == "neigh") {
			m[k] = v
		}
	}
	f.linkSysctls[index] = m
	for _, l := range f.links {
		if l.Index == index {
			f.ipv6MTU(l)
		}
	}
}

// ipv6MTU sets a link's net.ipv6.conf.LINK.mtu to its MTU, as the kernel
// does when the link is made, changes its MTU or comes up
// (addrconf_notify). Called locked.
func (f *Kernel) ipv6MTU(l *model.Link) {
	if m := f.linkSysctls[l.Index]; m != nil && l.MTU >= 1280 {
		m["net.ipv6.conf.default.mtu"] = strconv.Itoa(l.MTU)
	}
}

// defaultKey is a per-link key's "default" one, whose value a new link
// takes (the fake has a neigh "default" directory, unlike a namespace other
// than the first; lo's neigh keys come from it like any link's).
func defaultKey(key string) string {
	p := strings.SplitN(key, ".", 5)
	p[3] = "default"
	return strings.Join(p, ".")
}

// PutSysctl sets a parameter without a write (foreign state); a per-link
// key needs its link.
func (f *Kernel) PutSysctl(key, value string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.setSysctl(key, value); err != nil {
		panic(err)
	}
}

// SysctlValue returns a parameter's value as the kernel prints it, and
// whether the kernel has it.
func (f *Kernel) SysctlValue(key string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sysctl(key)
}

// sysctl reads a key. Called locked.
func (f *Kernel) sysctl(key string) (string, bool) {
	if link, _, _, ok := model.SysctlLink(key); ok {
		l := f.links[link]
		if l == nil {
			return "", false
		}
		tmpl := defaultKey(key)
		// Keyed by ifindex: a link made again has the defaults again.
		if v, ok := f.linkSysctls[l.Index][tmpl]; ok {
			return v, true
		}
		v, ok := f.sysctls[tmpl]
		return v, ok
	}
	v, ok := f.sysctls[key]
	return v, ok
}

// setSysctl writes a key the kernel has. Called locked.
func (f *Kernel) setSysctl(key, value string) error {
	if _, ok := f.sysctl(key); !ok {
		return fmt.Errorf("set sysctl %s: %w", key, kernel.ErrNotFound)
	}
	if link, _, _, ok := model.SysctlLink(key); ok {
		idx := f.links[link].Index
		tmpl := defaultKey(key)
		if f.linkSysctls[idx] == nil {
			f.linkSysctls[idx] = map[string]string{}
		}
		f.linkSysctls[idx][tmpl] = value
		return nil
	}
	f.sysctls[key] = value
	return nil
}

// Sysctls reads keys; those the fake does not have are left out.
func (f *Kernel) Sysctls(keys []string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.injected(CallSysctls, ""); err != nil {
		return nil, fmt.Errorf("read sysctls: %w", err)
	}
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := f.sysctl(k); ok {
			out[k] = v
		}
	}
	return out, nil
}

// SetSysctl writes a key (object for failure injection: the key).
func (f *Kernel) SetSysctl(key, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.write(CallSetSysctl, key); err != nil {
		return fmt.Errorf("set sysctl %s: %w", key, err)
	}
	if err := f.setSysctl(key, value); err != nil {
		return err
	}
	f.logged(CallSetSysctl, key+"="+value)
	return nil
}

// sysctlLines renders the parameters that differ from a fresh kernel's
// (a link's IPv6 MTU: from its MTU).
// Called locked.
func (f *Kernel) sysctlLines() []string {
	var out []string
	for k, v := range f.sysctls {
		if defaultSysctls[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s = %s", k, v))
		}
	}
	for _, n := range sortedNames(f.links) {
		l := f.links[n]
		for tmpl, v := range f.linkSysctls[l.Index] {
			if tmpl == "net.ipv6.conf.default.mtu" && v == strconv.Itoa(l.MTU) {
				continue // a fresh link's, as the kernel sets it (ipv6MTU)
			}
			// Against a fresh kernel's default, not default's value now:
			// a key of the link's own stays in the dump when default is
			// written to the same value.
			if defaultSysctls[tmpl] != v {
				p := strings.SplitN(tmpl, ".", 5)
				p[3] = strings.ReplaceAll(n, ".", "/")
				key := strings.Join(p, ".")
				out = append(out, fmt.Sprintf("sysctl %s = %s", key, v))
			}
		}
	}
	sort.Strings(out)
	return out
}
