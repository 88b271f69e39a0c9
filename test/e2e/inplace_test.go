package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const tunnelFile = `version: 1
fou:
  - {port: 5555, ipproto: 4}
links:
  fou4_c0000202:
    kind: ipip
    mtu: MTU
    ipip:
      remote: 192.0.2.2
      local: 192.0.2.1
      ttl: 225
      encap: {type: fou, sport: SPORT, dport: 5555}
`

var ifindexRe = regexp.MustCompile(`^(\d+): `)

func ifindex(t *testing.T, ns *NetNS, name string) string {
	t.Helper()
	m := ifindexRe.FindStringSubmatch(ns.IP(t, "-o", "link", "show", name))
	if m == nil {
		t.Fatalf("no ifindex for %s", name)
	}
	return m[1]
}

// TestInPlaceChanges: an MTU change keeps the tunnel (same ifindex); a FoU
// source port change recreates it, because the kernel cannot change it in
// place.
func TestInPlaceChanges(t *testing.T) {
	requireModules(t, "ipip", "fou")
	ns := newNetNS(t, "")
	dir, state := t.TempDir(), t.TempDir()
	file := filepath.Join(dir, "tunnel.yaml")
	write := func(mtu, sport string) {
		cfg := strings.NewReplacer("MTU", mtu, "SPORT", sport).Replace(tunnelFile)
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apply := func() string { return runNetreconcile(t, ns, "apply", "-c", file, "--state-dir", state) }

	write("1400", "5555")
	apply()
	link := ns.IP(t, "-d", "link", "show", "fou4_c0000202")
	mustContain(t, "ip -d link", link, "mtu 1400", "remote 192.0.2.2 local 192.0.2.1 ttl 225", "encap fou encap-sport 5555 encap-dport 5555", "alias netreconcile")
	mustContain(t, "ip fou show", ns.IP(t, "fou", "show"), "port 5555 ipproto 4")
	first := ifindex(t, ns, "fou4_c0000202")

	write("1380", "5555")
	out := apply()
	mustContain(t, "apply mtu", out, "~ link fou4_c0000202", "mtu: 1400 -> 1380")
	if got := ifindex(t, ns, "fou4_c0000202"); got != first {
		t.Errorf("an MTU change recreated the link: ifindex %s -> %s", first, got)
	}

	write("1380", "auto")
	out = apply()
	mustContain(t, "apply sport", out, "± link fou4_c0000202", "encap fou encap-sport 5555 encap-dport 5555 -> encap fou encap-sport auto")
	if got := ifindex(t, ns, "fou4_c0000202"); got == first {
		t.Errorf("a FoU source port change kept ifindex %s; the kernel cannot change it in place", got)
	}
	mustContain(t, "ip -d link after sport change", ns.IP(t, "-d", "link", "show", "fou4_c0000202"), "encap-sport auto", "mtu 1380")
	if out := apply(); !strings.Contains(out, "No changes") {
		t.Errorf("apply after the replace is not empty:\n%s", out)
	}
}
