package apply_test

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// A multipath route is written whole (one add, then one replace when its
// next hops change), and a second pass writes nothing.
func TestMultipathRouteApply(t *testing.T) {
	const links = `version: 1
links:
  up0: {kind: veth, veth: {peer: up1}, addresses: [10.0.0.2/24]}
  up1: {kind: veth, veth: {peer: up0}, addresses: [10.0.1.2/24]}
routes:
`
	e, k := newEngine(t)
	st := load(t, links+"  - {to: 198.51.100.0/24, nexthops: [{via: 10.0.0.1, dev: up0, weight: 2}, {via: 10.0.1.1, dev: up1}]}\n  - {to: 203.0.113.0/24, via: 'fe80::1', dev: up0}\n")
	if _, res := reconcile(t, e, st); res.Err() != nil {
		t.Fatal(res.Err())
	}
	assertConverged(t, e, st)
	rs, _ := k.Routes(model.DefaultProtocol)
	var got []string
	for _, r := range rs {
		got = append(got, r.String())
	}
	want := "198.51.100.0/24 table main nexthop via 10.0.0.1 dev up0 weight 2 nexthop via 10.0.1.1 dev up1 weight 1\n" +
		"203.0.113.0/24 table main via inet6 fe80::1 dev up0"
	if g := strings.Join(got, "\n"); g != want {
		t.Fatalf("routes:\n%s\nwant:\n%s", g, want)
	}

	k.Log = nil
	st = load(t, links+"  - {to: 198.51.100.0/24, nexthops: [{via: 10.0.1.1, dev: up1, weight: 5}, {via: 10.0.0.1, dev: up0, weight: 2}]}\n")
	if _, res := reconcile(t, e, st); res.Err() != nil {
		t.Fatal(res.Err())
	}
	if g, w := strings.Join(k.Log, "\n"), "ReplaceRoute 198.51.100.0/24 table main\nDeleteRoute 203.0.113.0/24 table main"; g != w {
		t.Fatalf("writes:\n%s\nwant:\n%s", g, w)
	}
	assertConverged(t, e, st)
}
