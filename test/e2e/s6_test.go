package e2e

import (
	"strings"
	"testing"
)

// TestS6IPvlanNode applies the IPvlan node and pod examples: an ipvlan L2 link
// on the node's uplink carries traffic to a host on that link, and an
// unnumbered veth joins node and pod with /32 scope-link routes only.
func TestS6IPvlanNode(t *testing.T) {
	requireModules(t, "ipvlan", "dummy", "veth")
	node := newNetNS(t, "node")
	lan := newNetNS(t, "lan")
	// The pod's namespace must have the name the node file gives (peer-netns: pod).
	pod := newNamedNetNS(t, "pod")
	// eth1 is the node's ENI, on the same L2 segment as another VPC host.
	veth(t, node, "eth1", "", lan, "eth0", "10.1.0.99/24")

	applyExample(t, node, example(t, "ipvlan-node.yaml"))
	applyExample(t, pod, example(t, "ipvlan-pod.yaml"))

	mustContain(t, "node ip -d link", node.IP(t, "-d", "link", "show", "ipvl0"), "ipvlan", "mode l2", "alias netreconcile")
	vethLink := node.IP(t, "addr", "show", "dev", "veth-pod")
	if strings.Contains(vethLink, "inet ") {
		t.Errorf("the unnumbered veth has an IPv4 address:\n%s", vethLink)
	}
	mustContain(t, "node routes", node.IP(t, "route", "show"), "10.1.0.20 dev veth-pod proto 245 scope link")
	mustContain(t, "pod routes", pod.IP(t, "route", "show"),
		"default via 10.1.0.1 dev veth-node proto 245 onlink",
		"10.1.0.1 dev veth-node proto 245 scope link")

	// VPC traffic over the ipvlan: the LAN host reaches the ipvlan's address.
	out := lan.Run(t, "/bin/ping", "-c", "2", "-W", "2", "10.1.0.10")
	mustContain(t, "ping ipvlan", out, "2 packets received")
	// Node to pod over the unnumbered link, and back: the pod answers from its
	// own address through its default route via the node.
	out = node.Run(t, "/bin/ping", "-c", "2", "-W", "2", "10.1.0.20")
	mustContain(t, "ping pod", out, "2 packets received")
	t.Logf("node -> pod over the unnumbered veth:\n%s", out)
}
