package integration

import (
	"strings"
	"testing"
)

// 78. An IPv6 address whose prefix length changes (the same address, a
// static one or a link's pool entry given another prefix-length) is the
// kernel's address changed: the kernel knows an IPv6 address by the
// address alone. The plan added the new one and deleted the old: the add,
// a replace to the kernel, only refreshed the old address, and the delete
// took it away, leaving the link without it (and a pool's export route
// without its address).
// Walk finding 78 (host seed 90934393032559, step 72: "change the prefix
// lengths of the pool pv entry of p1a", fd99::1/128 -> /120).
func TestWalkFinding78IPv6PrefixLengthChange(t *testing.T) {
	e := newEnv(t)
	file := func(name, static, pool string) string {
		return e.file(name, "version: 1\npools:\n  pv: {subnets: [\"fd99::/120\"], block-size-bits: 0, reuse-delay: 0s}\n"+
			"links:\n  lo: {kind: device, state: up}\n  b0: {kind: bridge, addresses: [\""+static+"\", {pool: pv"+pool+"}]}\n")
	}
	e.apply(file("a.yaml", "fd00:78::1/64", ""))
	f := file("b.yaml", "fd00:78::1/120", ", prefix-length: 120")
	e.apply(f)
	got := e.ip("-6", "addr", "show", "dev", "b0")
	for _, want := range []string{"fd00:78::1/120", "fd99::/120"} {
		if !strings.Contains(got, want) {
			t.Errorf("b0 lacks %s:\n%s", want, got)
		}
	}
	e.converged(f)
	e.roundTrip(f)
}
