package engine_test

import (
	"context"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/wgpeer"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// S1's target sets fed by the peers that are Up: a real handshake (over
// wireguard-go) brings the peer up and adds its allowed IP to the set, and
// the peer going away (its handshake older than down-after, reached by
// moving the engine's clock) removes it. Each change is a one-element plan,
// and no table, set, chain or rule handle changes.
func TestPeerSetsFollowTheMesh(t *testing.T) {
	nettest.RequireTool(t, "nft")
	a, b := newNode(t, 1), newNode(t, 2)
	join(t, a, b)
	conf := a.config("{connect-timeout: 5s, down-after: 1m, interval: 1s}",
		peerSpec{node: b, endpoints: []string{b.under + ":51820"}, keepalive: "1s"}) + `nftables:
  inet talos_kubespan:
    sets:
      kubespan_targets_ipv4: {type: ipv4_addr, flags: [interval], elements-from: {wireguard: ` + a.dev + `, peers: up}}
      kubespan_targets_ipv6: {type: ipv6_addr, flags: [interval], elements-from: {wireguard: ` + a.dev + `}}
    chains:
      kubespan_outgoing:
        type: route
        hook: output
        priority: filter
        rules:
          - ip daddr @kubespan_targets_ipv4 meta mark set meta mark & 0xffffffdf | 0x00000040 accept
          - ip6 daddr @kubespan_targets_ipv6 meta mark set meta mark & 0xffffffdf | 0x00000040 accept
`
	cfg, eng := longLived(t, a, conf)
	var skew atomic.Int64
	eng.SetTracker(wgpeer.New(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }, nil))
	plan := func() *diff.Plan {
		t.Helper()
		p, err := eng.Plan(cfg.State)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	apply := func(p *diff.Plan) {
		t.Helper()
		res, err := eng.Apply(context.Background(), p)
		if err == nil {
			err = res.Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	list := func() string { return nettest.InNS(t, a.ns, "nft", "-a", "list", "table", "inet", "talos_kubespan") }

	apply(plan())
	b.apply(t, b.config("", peerSpec{node: a, endpoints: []string{a.under + ":51820"}}))
	if got := list(); strings.Contains(got, "elements") {
		t.Fatalf("the sets hold elements before any handshake:\n%s", got)
	}
	// The keepalive starts the handshake; wait for it (a bound, not a timing).
	for deadline := time.Now().Add(30 * time.Second); a.handshake(t, b) == "0"; {
		if time.Now().After(deadline) {
			t.Fatalf("no handshake between %s and %s", a.dev, b.dev)
		}
		time.Sleep(200 * time.Millisecond)
	}
	before := handles(list())
	if n := len(strings.Split(before, "\n")); n != 6 {
		t.Fatalf("%d lines with handles, want 6 (the table, 2 sets, the chain, 2 rules):\n%s", n, before)
	}

	step := func(what, want string) {
		t.Helper()
		p := plan()
		if got := p.String(); got != want {
			t.Fatalf("%s: plan:\n%s\nwant:\n%s", what, got, want)
		}
		apply(p)
		listing := list()
		if got := handles(listing); got != before {
			t.Errorf("%s: handles changed:\nbefore:\n%s\nafter:\n%s", what, before, got)
		}
		if p := plan(); !p.Empty() {
			t.Errorf("%s: a second pass plans:\n%s", what, p)
		}
	}
	step("peer up", "+ nft element inet talos_kubespan set kubespan_targets_ipv4 element 10.99.0.2\n")
	if !strings.Contains(list(), "elements = { 10.99.0.2 }") {
		t.Errorf("the set lacks the peer's allowed IP:\n%s", list())
	}
	skew.Store(int64(2 * time.Minute))
	step("peer down", "- nft element inet talos_kubespan set kubespan_targets_ipv4 element 10.99.0.2\n")
}

var handleLine = regexp.MustCompile(`(?m)^.* # handle \d+$`)

// handles lists every line of an `nft -a` listing that carries a handle.
func handles(listing string) string {
	var out []string
	for _, m := range handleLine.FindAllString(listing, -1) {
		out = append(out, strings.TrimSpace(m))
	}
	return strings.Join(out, "\n")
}
