package walk

import (
	"testing"
)

// TestWalkFinding103RunnerAgreesOnAKeptLink runs the walk's runner on a
// real kernel over a link whose MTU below 1280 leaves the file: the kernel
// keeps it, the step that declares an ipv6 key on it is refused by diff and
// apply alike and changes nothing (the runner checks both, and that the
// refusal names the link it finds kept), and the step after, without the
// key, converges with the oracle expecting no IPv6 on the link.
func TestWalkFinding103RunnerAgreesOnAKeptLink(t *testing.T) {
	pair := func(mtu int, keys map[string]string) *Config {
		return &Config{Protocol: 245, Links: map[string]*Link{
			"v0": {Name: "v0", Kind: "veth", Peer: "v1", MTU: mtu, Sysctls: keys},
			"v1": {Name: "v1", Kind: "veth", Peer: "v0"},
		}}
	}
	r := kernelRunner(t, nil)
	for i, s := range []struct {
		c       *Config
		refused bool
	}{
		{pair(1200, nil), false},
		{pair(0, map[string]string{"ipv6.hop_limit": "32"}), true},
		{pair(0, map[string]string{"ipv4.rp_filter": "2"}), false},
		{pair(1500, map[string]string{"ipv6.hop_limit": "32"}), false},
	} {
		if f := r.step(i, s.c); f != nil {
			t.Fatalf("step %d: %v", i+1, f)
		}
		if r.refused != s.refused {
			t.Fatalf("step %d: refused %v, want %v", i+1, r.refused, s.refused)
		}
	}
	if got := r.keptLow; got != 2 {
		t.Errorf("steps with a kept link: %d, want 2", got)
	}
}
