package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestS4KonnectivityAddress applies the Konnectivity example: a dummy link
// holds 10.0.0.1/32 with host scope; a local process listens on it and a
// local client connects.
func TestS4KonnectivityAddress(t *testing.T) {
	requireModules(t, "dummy")
	host := newNetNS(t, "host")
	applyExample(t, host, example(t, "konnectivity-agent.yaml"))

	link := host.IP(t, "-d", "link", "show", "konnectivity")
	mustContain(t, "ip -d link", link, "dummy", "alias netreconcile", ",UP")
	addr := host.IP(t, "-4", "addr", "show", "dev", "konnectivity")
	mustContain(t, "ip addr", addr, "inet 10.0.0.1/32 scope host konnectivity")

	listen(t, host, "10.0.0.1:6443")
	got, err := dial(t, host, "10.0.0.1:6443", 5*time.Second)
	if err != nil || !strings.HasPrefix(got, "hello from "+host.Name) {
		t.Fatalf("local client to 10.0.0.1:6443: %q, %v", got, err)
	}
	t.Logf("local client: %s", strings.TrimSpace(got))

	// The address is valid only inside the node (KEP-2025): every node has
	// its own agent on 10.0.0.1, so a second node on the same link that
	// connects to 10.0.0.1:6443 reaches its own agent, never this one, even
	// with a route to 10.0.0.0/24 on the shared link.
	other := newNetNS(t, "other")
	veth(t, host, "h-eth0", "192.168.50.1/24", other, "o-eth0", "192.168.50.2/24")
	applyExample(t, other, example(t, "konnectivity-agent.yaml"))
	other.IP(t, "route", "add", "10.0.0.0/24", "dev", "o-eth0")
	listen(t, other, "10.0.0.1:6443")
	got, err = dial(t, other, "10.0.0.1:6443", 5*time.Second)
	if err != nil || !strings.HasPrefix(got, "hello from "+other.Name) {
		t.Fatalf("the other node's client to 10.0.0.1:6443: %q, %v; want its own agent", got, err)
	}
	t.Logf("other node's client: %s", strings.TrimSpace(got))
}
