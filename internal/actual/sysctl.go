package actual

import (
	"fmt"
	"sort"
	"strings"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// SysctlKeys are the parameters a read covers: the kernel has thousands,
// and a read lists only those the file declares, those the ledger owns
// (with the value to restore, Original), and the "default" keys of the
// per-link ones among them: new links take their first value from them,
// and a link netreconcile made gets theirs back.
func SysctlKeys(desired []model.Sysctl, owned map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, s := range desired {
		add(s.Key)
		if _, _, tmpl, ok := model.SysctlLink(s.Key); ok {
			add(tmpl)
		}
		// The plan's warning about router advertisements (diff.Warning)
		// judges forwarding and accept_ra together: a file that declares
		// one has the other read beside it, and the default's.
		// A link's IPv6 MTU is set to its MTU when its IPv6 is turned
		// back on (diff.mtuAfterIPv6On): whether the plan does so, by the
		// link's own key or by all's, needs the link's disable_ipv6.
		if link, short, _, ok := model.SysctlLink(s.Key); ok && short == "ipv6.mtu" {
			if k, ok := model.PerLinkSysctl(link, "ipv6.disable_ipv6"); ok {
				add(k)
			}
		}
		if pre, ok := raKeyPrefix(s.Key); ok {
			for _, k := range []string{pre + "forwarding", pre + "accept_ra", "net.ipv6.conf.default.forwarding", "net.ipv6.conf.default.accept_ra"} {
				if pre != "net.ipv6.conf.all." || !strings.HasSuffix(k, "all.accept_ra") {
					add(k)
				}
			}
		}
	}
	for k := range owned {
		add(k)
		// A link's key the file no longer declares goes back, on a
		// link netreconcile made, to its template's value
		// (diff.sysctlBack): default's as the file leaves it, which a
		// family-wide key netreconcile wrote or gave back may have
		// changed since the key was recorded.
		if _, _, tmpl, ok := model.SysctlLink(k); ok {
			add(tmpl)
		}
	}
	sort.Strings(keys)
	return keys
}

// raKeyPrefix returns "net.ipv6.conf.X." for an IPv6 forwarding or
// accept_ra key of X (a link, all or default).
func raKeyPrefix(key string) (string, bool) {
	for _, suffix := range []string{".forwarding", ".accept_ra"} {
		if pre, ok := strings.CutSuffix(key, suffix); ok && strings.HasPrefix(pre, "net.ipv6.conf.") && strings.Count(pre, ".") == 3 {
			return pre + ".", true
		}
	}
	return "", false
}

// RAKeysNeeded reports whether a plan towards desired turns IPv6
// forwarding on for every link (net.ipv6.conf.all.forwarding, which the
// kernel now has off): then each link's forwarding and accept_ra are read
// too (ReadLinkRAKeys), for the plan's warning about router
// advertisements. The read is paid by the pass that turns forwarding on,
// not by every pass.
func RAKeysNeeded(desired []model.Sysctl, st *model.State) bool {
	d := model.FindSysctl(desired, "net.ipv6.conf.all.forwarding")
	if d == nil || d.Value != "1" {
		return false
	}
	h := model.FindSysctl(st.Sysctls, d.Key)
	return h != nil && h.Value != d.Value
}

// ReadLinkRAKeys adds every link's IPv6 forwarding and accept_ra to st's
// sysctls, those read already kept.
func ReadLinkRAKeys(k kernel.Reader, st *model.State) error {
	return ReadLinkKeys(k, st, []string{"ipv6.forwarding", "ipv6.accept_ra"})
}

// SpreadKeysNeeded returns the short keys of the links (ipv4.rp_filter)
// whose "default" key a plan towards desired may write, the kernel
// setting them on the links with it (model.SysctlDefaultSpreads): a
// declared one the kernel holds at another value, or one the ledger owns
// that left the file and is away from the value owed back. Each link's is
// then read too (ReadLinkKeys), for the plan to keep or set what the write
// moves; the read is paid by the pass that writes the default key.
func SpreadKeysNeeded(desired []model.Sysctl, st *model.State) []string {
	var shorts []string
	for _, h := range st.Sysctls {
		short, ok := model.SysctlDefaultSpreads(h.Key)
		if !ok {
			continue
		}
		d := model.FindSysctl(desired, h.Key)
		if d != nil && d.Value != h.Value || d == nil && h.Owned && h.Original != h.Value {
			shorts = append(shorts, short)
		}
	}
	return shorts
}

// ReadLinkKeys adds the short keys (ipv4.rp_filter) of every link to st's
// sysctls, those read already kept; a link without the key is left out.
func ReadLinkKeys(k kernel.Reader, st *model.State, shorts []string) error {
	var keys []string
	for name := range st.Links {
		for _, short := range shorts {
			if key, ok := model.PerLinkSysctl(name, short); ok && model.FindSysctl(st.Sysctls, key) == nil {
				keys = append(keys, key)
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	vals, err := k.Sysctls(keys)
	if err != nil {
		return fmt.Errorf("read sysctls: %w", err)
	}
	for key, v := range vals {
		s := model.Sysctl{Key: key, Value: model.NormalizeSysctl(v)}
		s.Link, _, _, _ = model.SysctlLink(key)
		st.Sysctls = append(st.Sysctls, s)
	}
	model.SortSysctls(st.Sysctls)
	return nil
}

// readSysctls reads the parameters of keys that the kernel has; the
// ledger's records say which are ours. Sysctls send no notifications: they
// are read on every pass.
func readSysctls(k kernel.Reader, st *model.State, keys []string, owned map[string]string) error {
	st.Sysctls = nil
	if len(keys) == 0 {
		return nil
	}
	vals, err := k.Sysctls(keys)
	if err != nil {
		return fmt.Errorf("read sysctls: %w", err)
	}
	for _, key := range keys {
		v, ok := vals[key]
		if !ok {
			continue
		}
		s := model.Sysctl{Key: key, Value: model.NormalizeSysctl(v)}
		s.Link, _, _, _ = model.SysctlLink(key)
		s.Original, s.Owned = owned[key]
		st.Sysctls = append(st.Sysctls, s)
	}
	return nil
}
