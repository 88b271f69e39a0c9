package desired

import (
	"testing"
	"unsafe"
)

// The routes of a file share one string per link name, in YAML as in a
// routes file: the decoder's string of each route's dev would otherwise
// stay with the model, 16 bytes a route for as long as the daemon
// enforces the file.
func TestRoutesShareDevNames(t *testing.T) {
	cfg, err := Parse([]Source{src("f.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n  br1: {kind: bridge}\nroutes:\n"+
		"  - {to: 10.1.0.0/24, dev: br0}\n  - {to: 10.2.0.0/24, dev: br0}\n"+
		"  - {to: 10.3.0.0/24, nexthops: [{dev: br0}, {dev: br1}]}\n  - {to: 10.4.0.0/24, nexthops: [{dev: br0}, {dev: br1}]}\n")})
	if err != nil {
		t.Fatal(err)
	}
	rs := cfg.State.Routes
	if len(rs) != 4 || rs[0].Dev != "br0" || len(rs[2].NextHops) != 2 || len(rs[3].NextHops) != 2 {
		t.Fatalf("routes: %v", rs)
	}
	data := func(s string) *byte { return unsafe.StringData(s) }
	if data(rs[0].Dev) != data(rs[1].Dev) || data(rs[0].Dev) != data(rs[2].NextHops[0].Dev) || data(rs[2].NextHops[0].Dev) != data(rs[3].NextHops[0].Dev) ||
		data(rs[2].NextHops[1].Dev) != data(rs[3].NextHops[1].Dev) {
		t.Error("routes through one link hold a string of its name each")
	}
}
