package desired

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// A key that is not a real one, recognisable in any output.
var testKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))

const peerKey = "xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg="

func writeKey(t *testing.T, dir, name, content string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func parseWG(t *testing.T, dir, wg string) (*Config, error) {
	t.Helper()
	src := "version: 1\nlinks:\n  kubespan:\n    kind: wireguard\n    mtu: 1420\n    wireguard:\n" + wg
	return Parse([]Source{{Name: filepath.Join(dir, "netreconcile.yaml"), Data: []byte(src)}})
}

func TestWireGuardConfig(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "kubespan.key", testKey+"\n", 0o600)
	psk := writeKey(t, dir, "peer.psk", testKey, 0o400)
	cfg, err := parseWG(t, dir, fmt.Sprintf(`      private-key-file: %s
      listen-port: 51820
      fwmark: 0x20
      rotation: {connect-timeout: 5s, down-after: 1m}
      peers:
        - public-key: %s
          preshared-key-file: peer.psk
          allowed-ips: [10.244.1.0/24, 192.168.1.2/32, "fd00::2/128"]
          persistent-keepalive: 25s
          endpoints: ["192.168.1.2:51820", "[2001:db8::2]:51820", "node2.example.com:51820"]
`, key, peerKey))
	if err != nil {
		t.Fatal(err)
	}
	w := cfg.State.Links["kubespan"].WireGuard
	var k [32]byte
	copy(k[:], "0123456789abcdef0123456789abcdef")
	if !w.PrivateKey.Equal(model.NewSecret(k)) || w.PublicKey != model.NewSecret(k).PublicKey() {
		t.Errorf("private key not read, or public key not derived")
	}
	if w.ListenPort != 51820 || w.FwMark != 0x20 || w.Rotation.ConnectTimeout.Seconds() != 5 || w.Rotation.DownAfter.Seconds() != 60 || w.Rotation.Interval != model.DefaultRotation.Interval {
		t.Errorf("device: %+v", w)
	}
	if len(w.Peers) != 1 {
		t.Fatalf("peers: %+v", w.Peers)
	}
	p := w.Peers[0]
	if p.PublicKey.String() != peerKey || !p.PresharedKey.IsSet() || p.PresharedKeyFile != psk || p.Keepalive.Seconds() != 25 || len(p.Endpoints) != 3 {
		t.Errorf("peer: %+v", p)
	}
	if got := fmt.Sprint(p.AllowedIPs); got != "[10.244.1.0/24 192.168.1.2/32 fd00::2/128]" {
		t.Errorf("allowed ips %s", got)
	}
}

func TestWireGuardConfigErrors(t *testing.T) {
	dir := t.TempDir()
	good := writeKey(t, dir, "good.key", testKey, 0o600)
	open := writeKey(t, dir, "open.key", testKey, 0o644)
	group := writeKey(t, dir, "group.key", testKey, 0o640)
	garbage := writeKey(t, dir, "garbage.key", "not-a-key-"+testKey[:20], 0o600)
	tests := []struct {
		name, wg string
		want     []string
	}{
		{"world-readable key file", "      private-key-file: " + open + "\n",
			[]string{"netreconcile.yaml:7:25: links.kubespan.wireguard.private-key-file: key file " + open + " is accessible by others (mode 0644); chmod 600 it"}},
		{"group-readable key file", "      private-key-file: " + group + "\n", []string{"(mode 0640)"}},
		{"not a key", "      private-key-file: " + garbage + "\n", []string{"does not hold a WireGuard key"}},
		{"missing key file", "      private-key-file: /nonexistent/x.key\n", []string{"key file /nonexistent/x.key does not exist"}},
		{"no key at all", "      listen-port: 1\n", []string{"private-key-file: missing"}},
		{"both key sources", "      private-key-file: " + good + "\n      private-key-credential: ks\n", []string{"either private-key-file or private-key-credential"}},
		{"world-readable preshared key", "      private-key-file: " + good + "\n      peers:\n        - {public-key: " + peerKey + ", preshared-key-file: " + open + "}\n", []string{"peers[0].preshared-key-file: key file", "(mode 0644)"}},
		{"bad peer key", "      private-key-file: " + good + "\n      peers:\n        - {public-key: abc}\n", []string{"peers[0].public-key: expected a WireGuard key"}},
		{"bad endpoint", "      private-key-file: " + good + "\n      peers:\n        - {public-key: " + peerKey + ", endpoints: [\"2001:db8::1:51820\", \"host\"]}\n", []string{"endpoints[0]: expected ADDRESS:PORT", "endpoints[1]: expected ADDRESS:PORT"}},
		{"duplicate peer", "      private-key-file: " + good + "\n      peers:\n        - {public-key: " + peerKey + "}\n        - {public-key: " + peerKey + "}\n", []string{"peers[1].public-key: peer given twice"}},
		{"keepalive fraction", "      private-key-file: " + good + "\n      peers:\n        - {public-key: " + peerKey + ", persistent-keepalive: 1500ms}\n", []string{"whole seconds"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseWG(t, dir, tc.wg)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), testKey[:20]) {
				t.Errorf("error quotes key material:\n%v", err)
			}
		})
	}
}

func TestWireGuardCredential(t *testing.T) {
	dir := t.TempDir()
	writeKey(t, dir, "kubespan.key", testKey, 0o400)
	t.Setenv(CredentialsDirEnv, dir)
	cfg, err := parseWG(t, dir, "      private-key-credential: kubespan.key\n")
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.State.Links["kubespan"].WireGuard.PrivateKey.IsSet() {
		t.Fatal("credential not read")
	}
	t.Setenv(CredentialsDirEnv, "")
	if _, err := parseWG(t, dir, "      private-key-credential: kubespan.key\n"); err == nil || !strings.Contains(err.Error(), "$CREDENTIALS_DIRECTORY is not set") {
		t.Fatalf("without $CREDENTIALS_DIRECTORY: %v", err)
	}
}

// wgctrl would send an IPv4-mapped allowed IP as an IPv4 address with the
// IPv6 prefix length, which the kernel refuses on every pass: refused here.
// Walk finding 66 (host).
func TestWireGuardRefusesMappedAllowedIPs(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "kubespan.key", testKey+"\n", 0o600)
	_, err := parseWG(t, dir, fmt.Sprintf(`      private-key-file: %s
      peers:
        - public-key: %s
          allowed-ips: [10.244.1.0/24, "::ffff:10.0.0.0/104"]
`, key, peerKey))
	want := "links.kubespan.wireguard.peers[0].allowed-ips[1]: ::ffff:10.0.0.0/104 is an IPv4-mapped IPv6 prefix, which WireGuard cannot take: write the IPv4 prefix"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}

// Walk finding 152 (issue 30, guest probe): the kernel takes an all-zero
// private key for none and an all-zero preshared key for none; a file
// holding one never converged (every apply wrote it again, and setting a
// private key again expires every session of the device).
func TestWalkFinding152WireGuardAllZeroKey(t *testing.T) {
	dir := t.TempDir()
	zero := writeKey(t, dir, "zero.key", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", 0o600)
	good := writeKey(t, dir, "good.key", testKey+"\n", 0o600)
	for what, wg := range map[string]string{
		"private key":   "      private-key-file: " + zero + "\n",
		"preshared key": "      private-key-file: " + good + "\n      peers:\n        - {public-key: " + peerKey + ", preshared-key-file: " + zero + "}\n",
	} {
		_, err := parseWG(t, dir, wg)
		if err == nil || !strings.Contains(err.Error(), "holds the all-zero key, which the kernel takes for no key") {
			t.Errorf("%s: got %v, want the all-zero key refused", what, err)
		}
	}
}

// Walk finding 153 (issue 30, guest probe): WireGuard routes a prefix to
// one peer of a device and moves it to the peer given it last, so two
// peers with the same allowed IP never converged.
func TestWalkFinding153WireGuardAllowedIPOnTwoPeers(t *testing.T) {
	dir := t.TempDir()
	good := writeKey(t, dir, "good.key", testKey+"\n", 0o600)
	const other = "oZLW/RRDJQj/xqiOyu46uGJk8mqUBu6P/TB/zuauHX4="
	_, err := parseWG(t, dir, "      private-key-file: "+good+"\n      peers:\n"+
		"        - {public-key: "+peerKey+", allowed-ips: [10.1.0.0/24, 10.2.0.0/24]}\n"+
		"        - {public-key: "+other+", allowed-ips: [10.1.0.0/25, 10.1.0.0/24]}\n")
	want := "netreconcile.yaml:10:83: links.kubespan.wireguard.peers[1].allowed-ips: 10.1.0.0/24 is an allowed IP of the peer at " + dir + "/netreconcile.yaml:9:11 too"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "10.1.0.0/25 is") {
		t.Errorf("got %v, want %q", err, want)
	}
}

// Walk finding 155 (issue 30, guest probe): a WireGuard device binds its
// listen-port in both families, once per namespace. A FoU port on the same
// number (or a second device up on it) validated and met EADDRINUSE at
// apply, after the rest was applied.
func TestWalkFinding155WireGuardListenPortTaken(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "k.key", testKey+"\n", 0o600)
	dev := func(name, state string) string {
		return "  " + name + ": {kind: wireguard, state: " + state + ", wireguard: {private-key-file: " + key + ", listen-port: 65535}}\n"
	}
	file := "version: 1\nlinks:\n" + dev("wa", "up") + dev("wb", "up") + dev("wc", "down") +
		"fou:\n  - {port: 65535, family: ipv6, gue: true}\n  - {port: 5555, ipproto: 4}\n"
	_, err := Parse([]Source{{Name: filepath.Join(dir, "f.yaml"), Data: []byte(file)}})
	for _, want := range []string{
		"links.wb.wireguard.listen-port: UDP port 65535 is wa's listen-port too",
		"fou[0].port: UDP port 65535 is WireGuard device wa's listen-port",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
	if err != nil && (strings.Contains(err.Error(), "links.wc") || strings.Contains(err.Error(), "fou[1]")) {
		t.Errorf("a device that is down, or another port, refused: %v", err)
	}
}

// A prefix a peer lists twice is kept once, the list sorted, whatever the
// order it was written in; a peer without allowed IPs has none.
func TestPeerAllowedIPsKeptOnce(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "wg.key", testKey+"\n", 0o600)
	other := base64.StdEncoding.EncodeToString([]byte("abcdefghijklmnopqrstuvwxyz012345"))
	cfg, err := parseWG(t, dir, fmt.Sprintf(`      private-key-file: %s
      peers:
        - {public-key: %s, allowed-ips: [10.0.0.2/32, "fd00::1/128", 10.0.0.1/32, 10.0.0.2/32, "fd00::1/128", 10.0.0.2/32]}
        - {public-key: %s}
`, key, peerKey, other))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range cfg.State.Links["kubespan"].WireGuard.Peers {
		var got []string
		for _, a := range p.AllowedIPs {
			got = append(got, a.String())
		}
		want := []string{"10.0.0.1/32", "10.0.0.2/32", "fd00::1/128"}
		if p.PublicKey.String() == other {
			want = nil
			if p.AllowedIPs != nil {
				t.Errorf("peer without allowed IPs: %#v", p.AllowedIPs)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("peer %s: allowed IPs %v, want %v", p.PublicKey, got, want)
		}
	}
}

// A peer given twice names where it was first given: the peer before it
// in the list, not the one at the same index of another list.
func TestPeerGivenTwiceNamesTheFirst(t *testing.T) {
	dir := t.TempDir()
	good := writeKey(t, dir, "good.key", testKey+"\n", 0o600)
	const other = "oZLW/RRDJQj/xqiOyu46uGJk8mqUBu6P/TB/zuauHX4="
	_, err := parseWG(t, dir, "      private-key-file: "+good+"\n      peers:\n"+
		"        - {public-key: "+other+"}\n"+
		"        - {public-key: "+peerKey+"}\n"+
		"        - {public-key: "+other+"}\n"+
		"        - {public-key: "+peerKey+"}\n")
	for _, want := range []string{
		"netreconcile.yaml:11:24: links.kubespan.wireguard.peers[2].public-key: peer given twice (first at " + dir + "/netreconcile.yaml:9:11)",
		"netreconcile.yaml:12:24: links.kubespan.wireguard.peers[3].public-key: peer given twice (first at " + dir + "/netreconcile.yaml:10:11)",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want %q", err, want)
		}
	}
}
