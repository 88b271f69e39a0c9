package desired

import (
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// The routes fast path gives what the general decoder gives: the same state,
// the same errors at the same positions, whatever the file.
func TestFastRoutesMatchesDecoder(t *testing.T) {
	head := "version: 1\nlinks:\n  eth0: {kind: device}\n"
	for _, f := range []string{
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n  - {to: 10.1.0.0/24, via: 10.0.0.1, table: 100, metric: 0x10, mtu: 1400, tos: 4, onlink: true}\n",
		head + "routes:\n    -   {to: 2001:db8::/32, dev: eth0, family: ipv6, scope: link, src: 2001:db8::1}\n\nrules:\n  - {priority: 100, table: 100}\n",
		"routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n" + "version: 1\nlinks:\n  eth0: {kind: device}\n",
		"routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n",                                                   // no version: error at the mapping
		"# comment\n\nroutes:\n  - {to: 10.0.0.0/24, dev: eth0}\nlinks: {}\n",                           // undeclared link
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n  - {to: 10.0.0.0/24, dev: eth0}\n",          // declared twice
		head + "routes:\n  - {to: 10.0.0.1/24, dev: eth0}\n",                                            // host bits
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0, dev: eth0}\n",                                 // key twice
		head + "routes:\n  - {to: 10.0.0.0/24, dve: eth0}\n",                                            // unknown key
		head + "routes:\n  - {to: 10.0.0.0/24, dev: null}\n",                                            // null
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0} # note\n",                                     // comment
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n   - {to: 10.1.0.0/24, dev: eth0}\n",         // indentation
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n    extra: 1\n",                              // trailing junk
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\nroutes:\n  - {to: 10.1.0.0/24, dev: eth0}\n", // key twice
		head + "routes:\n  - {to: default, via: 10.0.0.1, metric: -1}\n",
		head + "routes:\n  - {to: 10.0.0.0/24, type: blackhole, table: 0}\n",
		head + "routes:\n  - {to: fe80::, dev: eth0}\n",
		head + "  x: \"a\nroutes:\n  - {to: 10.0.0.0/24, dev: eth0}\n",
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n---\nversion: 1\n",
		head + "routes:\n  - {to: 10.0.0.0/24, dev: eth0}\n  - to: 10.1.0.0/24\n    dev: eth0\n",
		// Block style.
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n  - to: 10.1.0.0/24\n    via: 10.0.0.1\n    table: 100\n",
		head + "routes:\n\n  -   to: 10.0.0.0/24\n      dev: eth0\n\n  -\n    to: 10.1.0.0/24\n    dev: eth0\nrules: []\n",
		head + "routes:\n- to: 10.0.0.0/24\n  dev: eth0\n",                             // items at the key's indentation
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n    dev: eth0\n",          // key twice
		head + "routes:\n  - to: 10.0.0.0/24\n    dve: eth0\n",                         // unknown key
		head + "routes:\n  - to: 10.0.0.0/24\n   dev: eth0\n",                          // indentation
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n  -\n",                    // null item
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n  - 5\n",                  // not a mapping
		head + "routes:\n  - to: 10.0.0.0/24\n    dev:\n      - eth0\n",                // a list for a string
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n   # note\n",              // comment
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n    metric: 1\n      2\n", // continued scalar
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n  - - x\n",                // nested list
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n  -x: 1\n",
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n...\n",
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n...\nx: 1\n",
		"routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n" + head,
		head + "routes:\n  - to: 10.0.0.0/24\n    dev: eth0\n" + strings.Repeat("  - to: 10.1.0.0/24\n    type: blackhole\n", 2500),
	} {
		fastPath = false
		want, wantErr := Parse([]Source{{"f.yaml", []byte(f)}})
		fastPath = true
		got, gotErr := Parse([]Source{{"f.yaml", []byte(f)}})
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotErr, wantErr) {
			t.Errorf("file:\n%s\nfast path: %v %v\ndecoder: %v %v", f, got, gotErr, want, wantErr)
		}
	}
}

// The files the benchmark loads take the fast path.
func TestFastRoutesApplies(t *testing.T) {
	fr, ok := scanRoutes("f.yaml", routesFile(10))
	if !ok || len(fr.routes) != 10 {
		t.Fatalf("fast path not taken: %v, %d routes", ok, len(fr.routes))
	}
}

// Block-style route lists take the chunked path.
func TestFastBlockRoutesApplies(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n  eth0: {kind: device}\nroutes:\n")
	for i := range 2500 {
		b.WriteString("  - to: 10." + strconv.Itoa(i>>8) + "." + strconv.Itoa(i&255) + ".0/24\n    dev: eth0\n")
	}
	fr, ok := scanRoutes("f.yaml", []byte(b.String()))
	if !ok || len(fr.routes) != 2500 || fr.routes[2499].Pos != (Pos{"f.yaml", 4 + 2*2499 + 1, 5}) {
		t.Fatalf("block path not taken: %v, %d routes", ok, len(fr.routes))
	}
}
