package integration

import (
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
	"github.com/netreconcile/netreconcile/test/nftcorpus"
)

// TestNftFinding31DeclaredSize65535OfAFedSet: a set the packet path fills,
// declared with `size 65535` as firewalls often write it (a ban list fed by
// `add @banned { ip saddr }`). The kernel gives a set fed by a rule that
// size when it has none, so the kernel's side reads that size as none; the
// compile's side did too when it compiled the rule with the set, but not
// when the rule was in the kernel already and the set was compiled alone:
// every apply after the first replaced the whole table, emptying the ban
// list. The set is now the same when either reading is the kernel's.
func TestNftFinding31DeclaredSize65535OfAFedSet(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("f.yaml", `version: 1
nftables:
  inet fw:
    sets:
      banned:
        type: ipv4_addr
        flags: [dynamic, timeout]
        timeout: 10m
        size: 65535
      seen:
        typeof: ip saddr . tcp dport
        flags: [dynamic]
        size: 65535
      nosize:
        type: ipv4_addr
        flags: [dynamic]
    chains:
      input:
        type: filter
        hook: input
        priority: filter
        rules:
          - ip saddr @banned drop
          - ct state new add @seen { ip saddr . tcp dport } add @nosize { ip saddr }
          - tcp dport 22 update @banned { ip saddr timeout 1h } drop
`)
	e.apply(f)
	nsN := nettest.NewNetNS(t)
	script, keys, err := nftcorpus.FirewallScript(mustRead(t, f))
	if err != nil {
		t.Fatal(err)
	}
	nettest.InNS(t, nsN, "nft", "-f", e.file("f.nft", script))
	if n, w := nftcorpus.ReadTable(t, nsN, keys[0]), nftcorpus.ReadTable(t, e.ns, keys[0]); n != w {
		t.Errorf("nft -f:\n%s\nnetreconcile:\n%s", n, w)
	}
	e.settled(f, keys[0])
}
