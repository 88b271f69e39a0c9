package apply_test

import (
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// With a kernel that records address protocols: the file's addresses on a
// device are added with ours, one found without a protocol is stamped in
// place, ours are pruned when they leave the file, another program's are
// kept, and a second pass writes nothing.
func TestAddressProtocolApply(t *testing.T) {
	e, k := newEngine(t)
	k.RecordsAddressProtocols = true
	k.PutLink(&model.Link{Name: "eth0", Kind: model.KindDevice, Up: true, MTU: 1500})
	k.PutAddress(model.Address{Link: "eth0", Prefix: pfx("10.0.0.5/24")})                                // by hand, before
	k.PutAddress(model.Address{Link: "eth0", Prefix: pfx("10.0.0.8/24"), Protocol: 16, Secondary: true}) // another program's
	st := load(t, "version: 1\nlinks:\n  eth0: {kind: device, addresses: [10.0.0.5/24, 10.0.0.6/24, '2001:db8::6/64']}\n")
	if _, res := reconcile(t, e, st); res.Err() != nil {
		t.Fatal(res.Err())
	}
	assertConverged(t, e, st)
	protos := func() string {
		as, _ := k.Addresses()
		var b []string
		for _, a := range as {
			b = append(b, a.Prefix.String()+"="+model.ProtocolName(a.Protocol))
		}
		return strings.Join(b, " ")
	}
	if g, w := protos(), "10.0.0.5/24=245 10.0.0.6/24=245 10.0.0.8/24=16 (dhcp) 2001:db8::6/64=245"; g != w {
		t.Fatalf("addresses: %s\nwant: %s", g, w)
	}
	st = load(t, "version: 1\nlinks:\n  eth0: {kind: device, addresses: [10.0.0.5/24]}\n")
	if _, res := reconcile(t, e, st); res.Err() != nil {
		t.Fatal(res.Err())
	}
	if g, w := protos(), "10.0.0.5/24=245 10.0.0.8/24=16 (dhcp)"; g != w {
		t.Fatalf("after the file dropped two: %s\nwant: %s", g, w)
	}
	assertConverged(t, e, st)
}
