package desired

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// The peers list's own decoder gives what the generic decoder gives for
// the same list: the same peers, the same errors at the same positions.
// The generic decoder is the oracle, as for routes: the list is decoded
// again by it, as a list of a type without the peers' own decoder.
func TestPeerDecoderAgreesWithGeneric(t *testing.T) {
	type plainPeer wgPeerConf
	rnd := rand.New(rand.NewPCG(5, 6))
	pick := func(xs ...string) string { return xs[rnd.IntN(len(xs))] }
	values := []string{peerKey, "x", "~", "null", "[a, b]", "{a: 1}", "1", "25s", "-1s", "2d", "70000s", "true", "'true'", "\"1\"", "*v", "*l", "\"\"", "[]", "{}",
		"[10.0.0.1/32, fd00::1/128]", "[10.0.0.1/24]", "[10.0.0.0/24, default, ~, x, [1], {}, *v]", "10.0.0.0/24", "[::ffff:10.0.0.0/120]",
		"[\"192.0.2.1:51820\", \"[2001:db8::1]:51820\", h.example:1]", "[\"192.0.2.1\", x:0, ~, [], *v]", "192.0.2.1:51820", "peer.psk"}
	keys := []string{"public-key", "allowed-ips", "persistent-keepalive", "endpoints", "preshared-key-file", "keep-preshared-key", "endpoint", "<<", "public-key"}
	for round := range 2000 {
		var b strings.Builder
		b.WriteString("v: &v 10.1.0.0/16\nl: &l [10.2.0.0/16]\npeers:\n")
		for range rnd.IntN(6) {
			switch rnd.IntN(12) {
			case 0:
				b.WriteString("  - " + pick("x", "~", "[1]", "", "{}", "*v", "*l") + "\n")
				continue
			}
			var fields []string
			for range rnd.IntN(6) {
				fields = append(fields, keys[rnd.IntN(len(keys))]+": "+values[rnd.IntN(len(values))])
			}
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(fields, ", "))
		}
		var doc yaml.Node
		if err := yaml.Unmarshal([]byte(b.String()), &doc); err != nil {
			continue
		}
		seq := doc.Content[0].Content[5]
		if seq.Kind != yaml.SequenceNode {
			continue
		}
		agreesWithGeneric(t, fmt.Sprintf("round %d, file\n%s\n", round, b.String()), seq, "links.wg0.wireguard.peers", (*decoder).decodePeers,
			func(p *plainPeer) *wgPeerConf { return (*wgPeerConf)(p) })
	}
}
