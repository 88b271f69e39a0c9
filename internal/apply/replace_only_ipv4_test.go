package apply_test

import "testing"

// Replacing a link's only IPv4 address flushes the link's IPv4 routes, and
// the plan adds them again; a new IPv4 address the file lists before it
// must not be added first, or the link keeps an IPv4 address, the kernel
// keeps the routes, and adding them again fails (EEXIST). Found by the
// failure walk (seed 53130299532208, step 87).
func TestReplaceOnlyIPv4AddressBeforeOtherCreates(t *testing.T) {
	before := `version: 1
links:
  d0: {kind: dummy, addresses: ["10.149.1.2/24"]}
routes:
  - {to: "172.16.0.0/24", dev: "d0", metric: 10}
`
	after := `version: 1
links:
  d0: {kind: dummy, addresses: [{address: "10.149.1.2/24", scope: host, noprefixroute: true}, "10.149.0.2/24"]}
routes:
  - {to: "172.16.0.0/24", dev: "d0", metric: 10}
`
	e, _ := newEngine(t)
	if _, res := reconcile(t, e, load(t, before)); res.Err() != nil {
		t.Fatal(res.Err())
	}
	st := load(t, after)
	plan, res := reconcile(t, e, st)
	if err := res.Err(); err != nil {
		t.Fatalf("%v\nplan:\n%s", err, plan)
	}
	assertConverged(t, e, st)
}
