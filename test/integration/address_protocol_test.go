package integration

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Addresses owned by protocol (IFA_PROTO, Linux 6.3): on a device
// netreconcile did not create, the file's addresses are added with our
// protocol and one added by hand before is stamped in place; when they
// leave the file, ours are deleted and the one another hand added is kept;
// a second apply writes nothing. ip(8) checks which addresses exist (the
// iproute2 here, 6.1, does not print an address's protocol: that is read
// with the kernel package's dump, whose other fields are tested against
// the library's).
func TestAddressProtocolPrunesOursOnADevice(t *testing.T) {
	e := newRteEnv(t)
	e.ip("link", "add", "rteeth0", "type", "veth", "peer", "name", "rteeth1")
	e.ip("link", "set", "rteeth0", "up")
	e.ip("addr", "add", "10.0.0.5/24", "dev", "rteeth0")
	e.ip("addr", "add", "10.0.0.9/24", "dev", "rteeth0") // another hand's, never in the file
	k, err := kernel.Open("/run/netns/" + e.ns)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if !k.AddressProtocols() {
		t.Skip("this kernel does not record address protocols (Linux 6.3)")
	}
	addrs := func() string {
		var ls []struct {
			AddrInfo []struct {
				Local     string `json:"local"`
				PrefixLen int    `json:"prefixlen"`
				Scope     string `json:"scope"`
			} `json:"addr_info"`
		}
		if err := json.Unmarshal([]byte(e.ip("-j", "addr", "show", "dev", "rteeth0")), &ls); err != nil || len(ls) != 1 {
			t.Fatalf("ip -j addr: %v", err)
		}
		var b []string
		for _, a := range ls[0].AddrInfo {
			if a.Scope != "link" {
				b = append(b, a.Local+"/"+string(rune('0'+a.PrefixLen/10))+string(rune('0'+a.PrefixLen%10)))
			}
		}
		sort.Strings(b)
		return strings.Join(b, " ")
	}
	protos := func() map[string]int {
		if _, err := k.Links(); err != nil {
			t.Fatal(err)
		}
		as, err := k.Addresses()
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, a := range as {
			if a.Link == "rteeth0" {
				m[a.Prefix.String()] = a.Protocol
			}
		}
		return m
	}
	f := e.file("a.yaml", "version: 1\nlinks:\n  rteeth0: {kind: device, addresses: [10.0.0.5/24, 10.0.0.6/24, '2001:db8::6/64']}\n")
	out := e.apply(f)
	if !strings.Contains(out, "~ address 10.0.0.5/24 dev rteeth0: stamped as ours") {
		t.Errorf("the address added by hand is not stamped:\n%s", out)
	}
	if g, w := addrs(), "10.0.0.5/24 10.0.0.6/24 10.0.0.9/24 2001:db8::6/64"; g != w {
		t.Errorf("ip addr: %s, want %s", g, w)
	}
	p := protos()
	for a, want := range map[string]int{"10.0.0.5/24": model.DefaultProtocol, "10.0.0.6/24": model.DefaultProtocol, "2001:db8::6/64": model.DefaultProtocol, "10.0.0.9/24": 0} {
		if p[a] != want {
			t.Errorf("address %s has protocol %d, want %d", a, p[a], want)
		}
	}
	if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	f2 := e.file("b.yaml", "version: 1\nlinks:\n  rteeth0: {kind: device, addresses: [10.0.0.5/24]}\n")
	out = e.apply(f2)
	for _, d := range []string{"- address 10.0.0.6/24 dev rteeth0", "- address 2001:db8::6/64 dev rteeth0"} {
		if !strings.Contains(out, d) {
			t.Errorf("plan lacks %q:\n%s", d, out)
		}
	}
	if g, w := addrs(), "10.0.0.5/24 10.0.0.9/24"; g != w {
		t.Errorf("after the file dropped two, ip addr: %s, want %s", g, w)
	}
	if r := e.cli("apply", "-c", f2); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Fatalf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// An empty file: the device's addresses of ours go, but 10.0.0.5 is the
	// primary of 10.0.0.9 (not ours): deleting it would take 10.0.0.9 with
	// it, so it is a conflict, not a delete.
	r := e.cli("apply", "-c", e.file("c.yaml", "version: 1\n"))
	if !strings.Contains(r.Stdout+r.Stderr, "address 10.0.0.5/24 dev rteeth0 is ours (protocol 245) and no longer in the file") {
		t.Errorf("empty file: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if g, w := addrs(), "10.0.0.5/24 10.0.0.9/24"; g != w {
		t.Errorf("after the empty file, ip addr: %s, want %s", g, w)
	}
}
