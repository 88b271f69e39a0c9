package e2e

// Edges of the guest's link kinds (issue 30): keys at their limits, what
// the kernel changes by itself, someone else's objects beside ours.

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyFile writes a WireGuard key (base64) to a 0600 file and returns its path.
func keyFile(t *testing.T, b64 string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(p, []byte(b64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tryApply applies cfg and reports the error instead of failing.
func (f *linkFiles) tryApply(cfg string) (string, string, error) {
	f.t.Helper()
	if err := os.WriteFile(f.file, []byte(cfg), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return f.ns.Exec("", netreconcileBin(f.t), "apply", "-c", f.file, "--state-dir", f.state)
}

// showRoundTrip: show (or show --all) printed as a file validates, plans
// nothing and applies with zero writes.
func (f *linkFiles) showRoundTrip(what string, all bool) {
	f.t.Helper()
	args := []string{"show", "--state-dir", f.state}
	if all {
		args = append(args, "--all", "-c", f.file)
	}
	shown := runNetreconcile(f.t, f.ns, args...)
	rendered := filepath.Join(f.t.TempDir(), "shown.yaml")
	if err := os.WriteFile(rendered, []byte(shown), 0o644); err != nil {
		f.t.Fatal(err)
	}
	bin := netreconcileBin(f.t)
	if out, errOut, err := f.ns.Exec("", bin, "validate", "-c", rendered); err != nil {
		f.t.Errorf("%s: show's output does not validate: %v\n%s%s\n%s", what, err, out, errOut, shown)
		return
	}
	if out, errOut, err := f.ns.Exec("", bin, "diff", "-c", rendered, "--state-dir", f.state); err != nil {
		f.t.Errorf("%s: show's output plans something: %v\n%s%s\n%s", what, err, out, errOut, shown)
	}
	if out, errOut, err := f.ns.Exec("", bin, "apply", "-c", rendered, "--state-dir", f.state); err != nil || !strings.Contains(out, "No changes") {
		f.t.Errorf("%s: show's output applied: %v\n%s%s\n%s", what, err, out, errOut, shown)
	}
}

// Walk finding 154 (issue 30, guest probe): the kernel keeps one ipvlan
// mode and one flag per parent and sets both from every ipvlan it makes
// there. An ipvlan of the file on a parent that carries someone else's
// (made with ip, l2 private) left theirs l2 bridge, or l3 bridge when
// ours was l3. Now a new ipvlan takes the parent's flag, and one in
// another mode is a conflict that leaves theirs as it was.
func TestWalkFinding154IPVlanLeavesForeignPortAlone(t *testing.T) {
	requireModules(t, "ipvlan", "dummy")
	for _, mode := range []string{"l2", "l3"} {
		t.Run(mode, func(t *testing.T) {
			ns := newNetNS(t, "")
			ns.IP(t, "link", "add", "d0", "type", "dummy")
			ns.IP(t, "link", "add", "link", "d0", "name", "fi0", "type", "ipvlan", "mode", "l2", "private")
			f := newLinkFiles(t, ns)
			out, errOut, err := f.tryApply("version: 1\nlinks:\n  d0: {kind: device}\n  i0: {kind: ipvlan, ipvlan: {parent: d0, mode: " + mode + "}}\n")
			if mode == "l3" && (err == nil || !strings.Contains(errOut+out, "the kernel keeps one ipvlan mode per parent")) {
				t.Errorf("apply of an l3 ipvlan beside someone else's l2 one: %v, want a conflict\n%s%s", err, out, errOut)
			}
			if mode == "l2" {
				if err != nil {
					t.Fatalf("apply: %v\n%s%s", err, out, errOut)
				}
				f.converged()
			}
			mustContain(t, "someone else's ipvlan", ns.IP(t, "-d", "link", "show", "fi0"), "ipvlan  mode l2 private")
		})
	}
}

// Walk finding 150 (issue 30, guest probe): show printed a bond's members
// with the MTU the kernel gives them from the bond, which the loader
// refuses on a member: show's output of a bond with members did not load.
func TestWalkFinding150BondShowRoundTrip(t *testing.T) {
	requireModules(t, "bonding", "dummy")
	ns := newNetNS(t, "")
	f := newLinkFiles(t, ns)
	f.apply("version: 1\nlinks:\n  b0: {kind: bond, mtu: 9000, bond: {mode: 802.3ad}, addresses: [10.8.0.1/24]}\n  d0: {kind: dummy, master: b0}\n  d1: {kind: dummy, master: b0}\n")
	f.converged()
	f.showRoundTrip("a bond with members", false)
}

// A WireGuard peer roams: the kernel moves its endpoint to where its
// authenticated packets come from (here b's source address changes), to an
// address none of the file's candidates holds. diff plans nothing, apply
// writes nothing and keeps it, show's output round-trips, and a change of
// another key of the peer keeps the roamed endpoint too (docs/config.md,
// State the kernel changes by itself).
func TestWireGuardRoamedEndpointKept(t *testing.T) {
	requireModules(t, "wireguard", "veth")
	a, b := newNetNS(t, "a"), newNetNS(t, "b")
	veth(t, a, "ea", "192.0.2.1/24", b, "eb", "192.0.2.2/24")
	b.IP(t, "addr", "add", "192.0.2.3/24", "dev", "eb")
	ka, kb := mustKey(t), mustKey(t)
	fa := newLinkFiles(t, a)
	file := func(keepalive string) string {
		return "version: 1\nlinks:\n  ea: {kind: device}\n  wa:\n    kind: wireguard\n    addresses: [10.0.0.1/24]\n    wireguard:\n      private-key-file: " + keyFile(t, ka.String()) +
			"\n      listen-port: 51820\n      peers:\n        - {public-key: " + kb.PublicKey().String() + ", allowed-ips: [10.0.0.2/32], endpoints: ['192.0.2.2:51821'], persistent-keepalive: " + keepalive + "}\n"
	}
	fa.apply(file("0s"))
	b.IP(t, "link", "add", "wb", "type", "wireguard")
	b.WG(t, "set", "wb", "private-key", keyFile(t, kb.String()), "listen-port", "51821", "peer", ka.PublicKey().String(), "endpoint", "192.0.2.1:51820", "allowed-ips", "10.0.0.1/32")
	b.IP(t, "addr", "add", "10.0.0.2/24", "dev", "wb")
	b.IP(t, "link", "set", "wb", "up")
	ping(t, b, "10.0.0.1")
	mustContain(t, "a's endpoint before the roam", a.WG(t, "show", "wa", "endpoints"), "192.0.2.2:51821")
	// b's packets now leave from 192.0.2.3.
	b.Run(t, "sysctl", "-w", "net.ipv4.conf.eb.promote_secondaries=1")
	b.IP(t, "addr", "del", "192.0.2.2/24", "dev", "eb")
	ping(t, b, "10.0.0.1")
	mustContain(t, "a's endpoint after the roam", a.WG(t, "show", "wa", "endpoints"), "192.0.2.3:51821")
	fa.converged()
	fa.showRoundTrip("after the roam", false)
	out := fa.apply(file("25s"))
	if strings.Contains(out, "endpoint") {
		t.Errorf("a keepalive change wrote the endpoint:\n%s", out)
	}
	mustContain(t, "a's endpoint after a keepalive change", a.WG(t, "show", "wa", "endpoints"), "192.0.2.3:51821")
	fa.converged()
}
