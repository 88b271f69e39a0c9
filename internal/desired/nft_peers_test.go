package desired

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func peerSetsFile(t *testing.T, sets string) (*Config, error) {
	t.Helper()
	dir := t.TempDir()
	key := writeKey(t, dir, "kubespan.key", testKey, 0o600)
	src := fmt.Sprintf(`version: 1
links:
  kubespan:
    kind: wireguard
    wireguard:
      private-key-file: %s
      peers:
        - {public-key: %s, allowed-ips: [10.100.0.2/32, "fd00::2/128"]}
  br0: {kind: bridge}
nftables:
  inet t:
    sets:
%s`, key, peerKey, sets)
	return Parse([]Source{{Name: filepath.Join(dir, "f.yaml"), Data: []byte(src)}})
}

func TestNftElementsFrom(t *testing.T) {
	cfg, err := peerSetsFile(t, `      v4:
        type: ipv4_addr
        flags: [interval]
        elements: [10.244.0.0/16]
        elements-from: {wireguard: kubespan, peers: all}
      v6: {type: ipv6_addr, flags: [interval], elements-from: {wireguard: kubespan}}
`)
	if err != nil {
		t.Fatal(err)
	}
	tb := cfg.State.NFTables[0]
	v4, v6 := tb.Set("v4"), tb.Set("v6")
	if v4.From == nil || v4.From.WireGuard != "kubespan" || !v4.From.AllPeers || len(v4.Elems) != 1 {
		t.Errorf("v4 set: %+v from %+v", v4, v4.From)
	}
	// peers defaults to up, as KubeSpan's target sets.
	if v6.From == nil || v6.From.AllPeers || v6.From.Peers() != "up" || len(v6.Elems) != 0 {
		t.Errorf("v6 set: %+v from %+v", v6, v6.From)
	}
}

func TestNftElementsFromErrors(t *testing.T) {
	for _, c := range []struct{ sets, want string }{
		{"      s: {type: ipv4_addr, flags: [interval], elements-from: {wireguard: br0}}\n",
			`f.yaml:13:74: nftables.inet t.sets.s.elements-from.wireguard: link br0 is of kind bridge; expected a wireguard link (declared: kubespan)`},
		{"      s: {type: ipv4_addr, flags: [interval], elements-from: {wireguard: wg9}}\n",
			`f.yaml:13:74: nftables.inet t.sets.s.elements-from.wireguard: no link "wg9" in the file; expected a wireguard link (declared: kubespan)`},
		{"      s: {type: ipv4_addr, flags: [interval], elements-from: {peers: up}}\n",
			`nftables.inet t.sets.s.elements-from.wireguard: missing; expected the name of a wireguard link of this file (declared: kubespan)`},
		{"      s: {type: ipv4_addr, flags: [interval], elements-from: {wireguard: kubespan, peers: some}}\n",
			`nftables.inet t.sets.s.elements-from.peers: expected up (the peers whose handshakes are recent, as KubeSpan) or all, found "some"`},
		{"      s: {type: ipv4_addr, elements-from: {wireguard: kubespan}}\n",
			`nftables.inet t.sets.s.flags: a set fed by WireGuard peers holds prefixes: add flags: [interval]`},
		{"      s: {type: inet_service, flags: [interval], elements-from: {wireguard: kubespan}}\n",
			`f.yaml:13:17: nftables.inet t.sets.s.type: a set fed by WireGuard peers holds their allowed IPs: expected type ipv4_addr or ipv6_addr, found "inet_service"`},
		{"      s: {type: ipv4_addr, flags: [interval], elements-from: {wireguard: kubespan, from: x}}\n",
			`nftables.inet t.sets.s.elements-from.from: unknown key`},
	} {
		_, err := peerSetsFile(t, c.sets)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v\nwant %q", strings.TrimSpace(c.sets), err, c.want)
		}
	}
}
