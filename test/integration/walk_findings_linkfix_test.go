package integration

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
)

// A recreate of a link went ahead beside a link on it that the plan
// leaves as it is (in conflict, or held): the kernel deletes the links on a
// link it deletes, and releases its ports, so the link left as it is went
// with the old one. The delete of a link already waited for such links; a
// recreate (a vxlan's id, a macvlan's move into passthru, a veth's new
// peer) now waits too, and says so. Here the macvlan on the vxlan is in
// conflict for its master, a device that does not exist.
func TestWalkFindingRecreateWaitsForTheLinksItTakes(t *testing.T) {
	for _, c := range []struct{ name, before, after, kid string }{{
		name:   "macvlan on a vxlan",
		before: "  x0: {kind: vxlan, vxlan: {id: 100, remote: 198.51.100.1}}\n  m0: {kind: macvlan, macvlan: {parent: x0, mode: bridge}}\n",
		after:  "  x0: {kind: vxlan, vxlan: {id: 101, remote: 198.51.100.1}}\n  m0: {kind: macvlan, master: w0, macvlan: {parent: x0, mode: bridge}}\n  w0: {kind: device}\n",
		kid:    "m0",
	}, {
		name:   "macvlan on a veth end whose pair changes",
		before: "  va: {kind: veth, veth: {peer: vb}}\n  vb: {kind: veth, veth: {peer: va}}\n  m1: {kind: macvlan, macvlan: {parent: vb, mode: bridge}}\n",
		after:  "  va: {kind: veth, veth: {peer: vc}}\n  vc: {kind: veth, veth: {peer: va}}\n  vb: {kind: veth, veth: {peer: vd}}\n  vd: {kind: veth, veth: {peer: vb}}\n  m1: {kind: macvlan, master: w0, macvlan: {parent: vb, mode: bridge}}\n  w0: {kind: device}\n",
		kid:    "m1",
	}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\nlinks:\n"+c.before))
			before, indexes := e.links(), e.indexes()
			f := e.file("b.yaml", "version: 1\nlinks:\n"+c.after)
			for _, cmd := range []string{"diff", "apply"} {
				r := e.cli(cmd, "-c", f)
				if r.Code != 1 || !strings.Contains(r.Stderr, "is not recreated") {
					t.Errorf("%s: exit %d, want 1 with the recreate that waits\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
				} else if testing.Verbose() {
					t.Logf("%s:\n%s%s", cmd, r.Stdout, r.Stderr)
				}
			}
			after := e.links()
			if linkLine(after, c.kid) == "" || indexes[c.kid] != e.indexes()[c.kid] {
				t.Errorf("%s, left as it is for its conflict, went with the recreate:\n%s\n->\n%s", c.kid, before, after)
			}
		})
	}
}

// An MTU write to a link whose MTU the kernel passes on changed the links
// it passes it to, held or not the file's: a macvlan on a link is lowered
// with it (as a vlan is; an ipvlan follows it both ways, a bond's ports take
// the bond's). A macvlan held by max-disruption (its move into passthru, a
// recreate) was lowered by its parent's MTU write, which was in place; one
// netreconcile did not create, likewise. The write now waits: held with the
// macvlan, or a conflict for a link not the file's, and the parent keeps
// its MTU.
func TestWalkFindingMTUWriteWaitsForTheLinksItLowers(t *testing.T) {
	pair := "  va: {kind: veth, veth: {peer: vb}}\n  vb: {kind: veth, veth: {peer: va}}\n"
	lowered := "  va: {kind: veth, mtu: 1400, veth: {peer: vb}}\n  vb: {kind: veth, veth: {peer: va}}\n"
	t.Run("held macvlan", func(t *testing.T) {
		e := newEnv(t)
		e.apply(e.file("a.yaml", "version: 1\nlinks:\n"+pair+"  m0: {kind: macvlan, macvlan: {parent: va, mode: bridge}}\n"))
		before, indexes := e.links(), e.indexes()
		f := e.file("b.yaml", "version: 1\nsettings: {max-disruption: link-flapped}\nlinks:\n"+lowered+"  m0: {kind: macvlan, macvlan: {parent: va, mode: passthru}}\n")
		plan := e.heldPass(f, diff.LinkFlapped)
		deps := strings.Join(plan.HeldDependents, "\n")
		after := e.links()
		if b, a := linkLine(before, "m0"), linkLine(after, "m0"); b != a || indexes["m0"] != e.indexes()["m0"] {
			t.Errorf("m0 held, yet it changed:\n%s\n-> %s\nthe plan:\n%s\nheld dependents:\n%s", b, a, plan, deps)
		}
		if !strings.Contains(deps, "link va keeps its mtu 1500, not 1400") {
			t.Errorf("held dependents:\n%s\nwant va's MTU write that waits", deps)
		}
		// An apply by hand makes the whole file.
		e.apply(f)
		e.converged(f)
	})
	t.Run("foreign macvlan", func(t *testing.T) {
		e := newEnv(t)
		e.apply(e.file("a.yaml", "version: 1\nlinks:\n"+pair))
		e.ip("link", "add", "fm0", "link", "va", "type", "macvlan")
		before := e.links()
		f := e.file("b.yaml", "version: 1\nlinks:\n"+lowered)
		for _, cmd := range []string{"diff", "apply"} {
			r := e.cli(cmd, "-c", f)
			if r.Code != 1 || !strings.Contains(r.Stderr, "link va keeps its mtu 1500, not 1400: the kernel would change the mtu of fm0 with it, which netreconcile did not create") {
				t.Errorf("%s: exit %d, want 1 with the MTU write that waits\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
			}
		}
		if b, a := linkLine(before, "fm0"), linkLine(e.links(), "fm0"); b != a {
			t.Errorf("fm0, not netreconcile's, changed:\n%s\n-> %s", b, a)
		}
	})
}

// The same with IPv6 turned back on for every link: a vxlan over IPv6 made
// on a device in the apply that takes net.ipv6.conf.all.disable_ipv6 from 1
// to 0 (given 0, or taken out of the file and given back), which sets the
// device's key, failed its create with EPERM, since only the device's own
// key was written before the create; and a device made in the same apply
// takes default's disable_ipv6, so default's from 1 to 0 goes before the
// device's create, and the device's own key, written after its create,
// before the vxlan's. The device is made by the first file, or by the
// second with the vxlan.
func TestWalkFindingVXLANMadeAfterAllOrDefaultGivesIPv6Back(t *testing.T) {
	const vxlan = "  x2: {kind: vxlan, vxlan: {id: 5, remote: \"2001:db8::5\", dev: d0}}\n"
	for _, c := range []struct{ name, before, after string }{
		{"all given 0", "sysctls: {net.ipv6.conf.all.disable_ipv6: 1}\nlinks:\n  d0: {kind: bridge}\n",
			"sysctls: {net.ipv6.conf.all.disable_ipv6: 0}\nlinks:\n  d0: {kind: bridge}\n" + vxlan},
		{"all given back", "sysctls: {net.ipv6.conf.all.disable_ipv6: 1}\nlinks:\n  d0: {kind: bridge}\n",
			"links:\n  d0: {kind: bridge}\n" + vxlan},
		{"all given 0, device made with the vxlan", "sysctls: {net.ipv6.conf.all.disable_ipv6: 1}\n",
			"sysctls: {net.ipv6.conf.all.disable_ipv6: 0}\nlinks:\n  d0: {kind: bridge}\n" + vxlan},
		{"default given 0, device made with the vxlan", "sysctls: {net.ipv6.conf.default.disable_ipv6: 1}\n",
			"sysctls: {net.ipv6.conf.default.disable_ipv6: 0}\nlinks:\n  d0: {kind: bridge}\n" + vxlan},
		{"default given back, device made with the vxlan", "sysctls: {net.ipv6.conf.default.disable_ipv6: 1}\n",
			"links:\n  d0: {kind: bridge}\n" + vxlan},
		{"own key given 0, device made with the vxlan under default's 1", "sysctls: {net.ipv6.conf.default.disable_ipv6: 1}\n",
			"sysctls: {net.ipv6.conf.default.disable_ipv6: 1}\nlinks:\n  d0: {kind: bridge, sysctls: {ipv6.disable_ipv6: 0}}\n" + vxlan},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.apply(e.file("a.yaml", "version: 1\n"+c.before))
			f := e.file("b.yaml", "version: 1\n"+c.after)
			e.apply(f)
			e.converged(f)
			if !strings.Contains(e.links(), "x2 vxlan") {
				t.Errorf("x2 not made:\n%s", e.links())
			}
		})
	}
}

// net.ipv6.conf.default.stable_secret was taken as any key: where someone
// had set it, a file declaring it wrote it, printing the secret in the plan
// and keeping it in the ledger, and the kernel set every link's
// addr_gen_mode to 2 with it, those the file does not name too (a write of
// default's secret reaches every link, with no per-link mark); where it was
// unset, the read failed (EIO) and so did every plan. The key is refused by
// validation, default's, all's and a link's, without the value: a secret
// is kept where secrets are, and nothing here can give an unset one back.
func TestWalkFindingStableSecretIsRefusedAndNeverShown(t *testing.T) {
	const secret = "2001:db8::1234"
	for _, c := range []struct{ name, file string }{
		{"default's", "sysctls: {net.ipv6.conf.default.stable_secret: \"" + secret + "\"}\nlinks:\n  b0: {kind: bridge}\n"},
		{"a link's", "links:\n  b0: {kind: bridge, sysctls: {ipv6.stable_secret: \"" + secret + "\"}}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			// Someone set default's before: the key reads.
			e.ip("link", "add", "fb0", "type", "bridge")
			e.setSysctl("net.ipv6.conf.default.stable_secret", "2001:db8::5")
			e.setSysctl("net.ipv6.conf.fb0.addr_gen_mode", "1")
			f := e.file("a.yaml", "version: 1\n"+c.file)
			for _, cmd := range []string{"validate", "diff", "apply"} {
				r := e.cli(cmd, "-c", f)
				if r.Code == 0 || !strings.Contains(r.Stderr, "stable_secret is not managed by netreconcile") {
					t.Errorf("%s: exit %d, want the key refused\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
				}
				for _, v := range []string{secret, "2001:0db8:0000:0000:0000:0000:0000:1234", "2001:db8::5", "2001:0db8:0000:0000:0000:0000:0000:0005"} {
					if strings.Contains(r.Stdout+r.Stderr, v) {
						t.Errorf("%s printed the secret %s:\n%s%s", cmd, v, r.Stdout, r.Stderr)
					}
				}
			}
			e.wantSysctl("net.ipv6.conf.fb0.addr_gen_mode", "1")
			e.wantSysctl("net.ipv6.conf.default.stable_secret", "2001:0db8:0000:0000:0000:0000:0000:0005")
		})
	}
}
