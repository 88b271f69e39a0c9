package desired

import (
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The schema of this kind (see conf.go): a mapping of keys to values, at
// the top of the file (full keys under net.) and under a link (keys of that
// link: ipv4.rp_filter, ipv6.disable_ipv6, ipv4.neigh.base_reachable_time_ms).
//
// Validation is offline: a key is checked for its shape here, and for
// existence against the kernel of the target namespace when a plan is made
// (the diff's checkSysctls), before anything is written.

type sysctlsConf struct {
	Meta
	entries []sysctlEntry
}

type sysctlEntry struct {
	key, value     string
	keyAt, valueAt Pos
}

func (s *sysctlsConf) decodeNode(d *decoder, n *yaml.Node, path string) {
	s.Pos = d.pos(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "expected a mapping of keys to values (such as {net.ipv4.ip_forward: 1}), found %s", kindWord(n))
		return
	}
	var seen keySet
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if v.Kind == yaml.AliasNode {
			v = v.Alias
		}
		if k.Kind != yaml.ScalarNode || k.Tag == "!!merge" {
			d.fail(k, path, "expected a key such as net.ipv4.ip_forward, found %s", kindWord(k))
			continue
		}
		fp := join(path, k.Value)
		if !seen.add(k.Value) {
			d.fail(k, fp, "key given twice")
			continue
		}
		val, ok := sysctlValue(v)
		if !ok {
			d.fail(v, fp, "expected the value as the kernel prints it: a decimal number, or a string such as \"32768 60999\"; found %s", kindWord(v))
			continue
		}
		s.entries = append(s.entries, sysctlEntry{key: k.Value, value: val, keyAt: d.pos(k), valueAt: d.pos(v)})
	}
}

// sysctlValue reads a value: a decimal integer, or a string the kernel
// parses. A YAML boolean is refused (the kernel reads 0 and 1, and "on" or
// "yes" would never match what it prints), and so is an integer in another
// base: the kernel accepts 0x10 and prints 16, so it would never match.
func sysctlValue(v *yaml.Node) (string, bool) {
	if v.Kind != yaml.ScalarNode {
		return "", false
	}
	var s string
	switch v.Tag {
	case "!!int":
		t := strings.TrimPrefix(v.Value, "-")
		if t == "" || strings.Trim(t, "0123456789") != "" || (len(t) > 1 && t[0] == '0') {
			return "", false
		}
		s = v.Value
	case "!!str":
		s = v.Value
	default:
		return "", false
	}
	s = model.NormalizeSysctl(s)
	return s, s != ""
}

// sysctlKeyRule is what a key may hold (model.ValidSysctlKey).
const sysctlKeyRule = model.SysctlKeyRule

func validSysctlKey(key string) bool { return model.ValidSysctlKey(key) }

// secretRefused refuses a stable_secret key, default's, all's or a
// link's. netreconcile does not manage it: the value is a secret, which a
// file holds inline and a plan, the ledger and an error would show; the
// kernel reads an unset secret as an error (EIO) and takes no write that
// unsets it, so the value found before could not be given back; and a
// write of default's sets addr_gen_mode on every link of the namespace, the
// links the file does not name included, with nothing per link to tell
// which it reached (addrconf_sysctl_stable_secret), and a link made after
// takes the secret and stable privacy addresses.
const secretRefused = "stable_secret is not managed by netreconcile: its value is a secret, which the file would hold and a plan would show; the kernel cannot take an unset secret back; and default's sets addr_gen_mode to 2 on every link, those the file does not name too; set it where secrets are kept (a root-only sysctl.d file, at boot) and leave it out of the file"

// sysctls builds the global keys of every file.
func (b *builder) sysctls(confs []*fileConf) {
	for _, fc := range confs {
		sc := fc.Sysctls
		if sc == nil {
			continue
		}
		for _, e := range sc.entries {
			path := "sysctls." + e.key
			switch {
			case !strings.HasPrefix(e.key, "net."):
				b.errs.add(e.keyAt, path, "only keys under net. are supported (those of the network namespace); found %q", e.key)
				continue
			case !validSysctlKey(e.key):
				b.errs.add(e.keyAt, path, "not a sysctl key; expected %s, such as net.ipv4.ip_forward", sysctlKeyRule)
				continue
			}
			if model.SysctlSecret(e.key) {
				b.errs.add(e.keyAt, path, secretRefused)
				continue
			}
			if link, short, _, ok := model.SysctlLink(e.key); ok {
				b.errs.add(e.keyAt, path, "a key of link %s: declare it under links.%s.sysctls as %s (kind device for a link netreconcile does not create)", link, link, short)
				continue
			}
			b.addSysctl(model.Sysctl{Key: e.key, Value: e.value, Origin: e.keyAt.String()}, e.keyAt, path)
		}
	}
	// net.ipv6.conf.all.disable_ipv6 sets every link's disable_ipv6: the
	// kernel would refuse an IPv6 address of a link that does not set its
	// own back to 0 (written after the global key).
	if at, ok := b.sysctlAt["net.ipv6.conf.all.disable_ipv6"]; ok {
		if all := model.FindSysctl(b.st.Sysctls, "net.ipv6.conf.all.disable_ipv6"); all != nil && all.Value != "0" {
			for _, a := range b.st.Addresses {
				key, _ := model.PerLinkSysctl(a.Link, "ipv6.disable_ipv6")
				if own := model.FindSysctl(b.st.Sysctls, key); a.Prefix.Addr().Is6() && (own == nil || own.Value != "0") {
					b.errs.add(at, "sysctls.net.ipv6.conf.all.disable_ipv6", "disables IPv6 on every link, and link %s declares IPv6 address %s, which the kernel then refuses; declare ipv6.disable_ipv6: 0 under the link, or remove one or the other", a.Link, a.Prefix)
					break
				}
			}
		}
	}
	b.vxlanOverIPv6Off()
	// One parameter under two names: the file would set it twice, and the
	// second write would win at every pass.
	a, b1 := b.sysctlAt["net.ipv4.ip_forward"], b.sysctlAt["net.ipv4.conf.all.forwarding"]
	if a.File != "" && b1.File != "" {
		first, second, name := a, b1, "net.ipv4.conf.all.forwarding"
		if posLess(b1, a) {
			first, second, name = b1, a, "net.ipv4.ip_forward"
		}
		b.errs.add(second, "sysctls."+name, "net.ipv4.ip_forward and net.ipv4.conf.all.forwarding are one parameter (first declared at %s); declare one", first)
	}
}

func posLess(a, b Pos) bool {
	if a.File != b.File {
		return a.File < b.File
	}
	if a.Line != b.Line {
		return a.Line < b.Line
	}
	return a.Col < b.Col
}

// linkSysctls builds a link's own keys.
func (b *builder) linkSysctls(name string, lc *linkConf) {
	sc := lc.Sysctls
	for _, e := range sc.entries {
		path := "links." + name + ".sysctls." + e.key
		key, ok := model.PerLinkSysctl(name, e.key)
		if !ok || !validSysctlKey(e.key) {
			b.errs.add(e.keyAt, path, "expected a key of the link: ipv4.NAME or ipv6.NAME (net.ipv4.conf.%s.NAME), or ipv4.neigh.NAME or ipv6.neigh.NAME, such as ipv4.rp_filter; found %q", name, e.key)
			continue
		}
		if model.SysctlSecret(key) {
			b.errs.add(e.keyAt, path, secretRefused)
			continue
		}
		if e.key == "ipv6.disable_ipv6" && e.value != "0" {
			// The kernel refuses the link's IPv6 addresses then: the
			// apply would fail on each, at every pass.
			for _, ac := range lc.Addresses {
				if ac != nil && ac.Address != nil && ac.Address.P.Addr().Is6() {
					b.errs.add(e.keyAt, path, "the link declares IPv6 address %s, which the kernel refuses on a link with IPv6 disabled; remove one or the other", ac.Address.P)
					break
				}
			}
		}
		b.addSysctl(model.Sysctl{Key: key, Value: e.value, Link: name, Origin: e.keyAt.String()}, e.keyAt, path)
	}
}

func (b *builder) addSysctl(s model.Sysctl, at Pos, path string) {
	if prev, dup := b.sysctlAt[s.Key]; dup {
		b.errs.add(at, path, "%s is declared twice (first at %s)", s.Key, prev)
		return
	}
	if b.sysctlAt == nil {
		b.sysctlAt = map[string]Pos{}
	}
	b.sysctlAt[s.Key] = at
	b.st.Sysctls = append(b.st.Sysctls, s)
}

// vxlanOverIPv6Off refuses a vxlan over IPv6 whose dev the file gives IPv6
// disabled (its own key, or all's without its own back to 0): the kernel
// refuses to make it (EPERM, "IPv6 support disabled by administrator"), at
// every pass.
func (b *builder) vxlanOverIPv6Off() {
	all := model.FindSysctl(b.st.Sysctls, "net.ipv6.conf.all.disable_ipv6")
	for _, name := range sortedKeys(b.st.Links) {
		l := b.st.Links[name]
		if l.VXLAN == nil || l.VXLAN.Dev == "" || !(l.VXLAN.Local.Is6() || l.VXLAN.Remote.Is6()) {
			continue
		}
		key, _ := model.PerLinkSysctl(l.VXLAN.Dev, "ipv6.disable_ipv6")
		own := model.FindSysctl(b.st.Sysctls, key)
		switch {
		case own != nil && own.Value != "0":
			b.errs.add(b.sysctlAt[key], "links."+l.VXLAN.Dev+".sysctls.ipv6.disable_ipv6", "disables IPv6 on %s, which vxlan %s runs over IPv6 on (dev); the kernel refuses to make the vxlan then; remove one or the other", l.VXLAN.Dev, name)
		case own == nil && all != nil && all.Value != "0":
			b.errs.add(b.sysctlAt[all.Key], "sysctls.net.ipv6.conf.all.disable_ipv6", "disables IPv6 on every link, and vxlan %s runs over IPv6 on %s (dev), which the kernel then refuses; declare ipv6.disable_ipv6: 0 under %s, or remove one or the other", name, l.VXLAN.Dev, l.VXLAN.Dev)
		}
	}
}
