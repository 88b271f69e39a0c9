package kernel_test

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nettest"
)

// A rule that changes a set from the packet path (delete @a) changes it
// without a commit, and the kernel takes such a rule on a set without the
// dynamic flag (review of the one-shot cache). Read twice at one
// generation, with a packet in between, the set shows the packet's change:
// it is never served from the element cache.
func TestNftElemCacheSkipsSetsChangedByPackets(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "set", "lo", "up")
	dir := t.TempDir()
	nettest.WriteFile(t, dir, "t.nft", `table ip t {
	set a { type ipv4_addr; elements = { 1.1.1.1, 127.0.0.9 } }
	set b { type ipv4_addr; elements = { 1.1.1.1, 127.0.0.9 } }
}
`)
	// The rule comes in a later transaction: nft then leaves the set's
	// flags as they are (made with the rule, the set gets flags dynamic).
	nettest.WriteFile(t, dir, "rule.nft", "add chain ip t out { type filter hook output priority 0; }\nadd rule ip t out udp dport 9 delete @a { ip daddr }\n")
	nettest.InNS(t, ns, "nft", "-f", dir+"/t.nft")
	nettest.InNS(t, ns, "nft", "-f", dir+"/rule.nft")
	if out := nettest.InNS(t, ns, "nft", "list", "set", "ip", "t", "a"); strings.Contains(out, "dynamic") {
		t.Fatalf("set a has flags dynamic: the test proves nothing\n%s", out)
	}
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	key := model.NftTableKey{Family: "ip", Name: "t"}
	read := func() map[string]int {
		tb, err := k.NFTTable(key)
		if err != nil || tb == nil {
			t.Fatalf("read: %v", err)
		}
		n := map[string]int{}
		for _, s := range tb.Sets {
			n[s.Name] = len(s.Elems)
		}
		return n
	}
	if got := read(); got["a"] != 2 || got["b"] != 2 {
		t.Fatalf("first read: %v", got)
	}
	nettest.InNS(t, ns, "bash", "-c", "echo x >/dev/udp/127.0.0.9/9")
	if out := nettest.InNS(t, ns, "nft", "list", "set", "ip", "t", "a"); strings.Contains(out, "127.0.0.9") {
		t.Fatalf("the packet did not delete 127.0.0.9: the test proves nothing\n%s", out)
	}
	if got := read(); got["a"] != 1 || got["b"] != 2 {
		t.Fatalf("second read, same generation: %v, want a with 1 element (read again), b with 2", got)
	}
}
