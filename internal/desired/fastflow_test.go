package desired

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func elems(n int, format string) string {
	var es []string
	for i := range n {
		es = append(es, fmt.Sprintf(format, i))
	}
	return strings.Join(es, ", ")
}

func nftFile(elements string) string {
	return "version: 1\nnftables:\n  ip t:\n    sets:\n      s:\n        type: ipv4_addr\n        flags: [interval]\n        elements: [" + elements + "]\n"
}

// Cutting long flow sequences gives what the general decoder gives: the
// same state, the same errors at the same positions, whatever the file.
func TestFastFlowsMatchesDecoder(t *testing.T) {
	good := elems(20, "10.0.%d.0/24")
	for _, f := range []string{
		nftFile(good),
		nftFile(good + "  "),
		nftFile(good + ", 10.0.3.0/24"),                   // given twice
		nftFile(good + ", 10.0.3.1/24"),                   // overlaps
		nftFile(good + ", 10.300.0.0/24"),                 // invalid
		nftFile(good + ", null"),                          // null
		nftFile(good + ",, 10.1.0.0/24"),                  // empty item
		nftFile(good + "] # comment"),                     // comment after
		nftFile(good + ", \"10.1.0.0/24\""),               // quoted
		nftFile(good) + "        extra: [" + good + "]\n", // unknown key
		nftFile(good) + "nftables: {}\n",
		nftFile(good) + "---\nversion: 1\n",
		strings.Replace(nftFile(good), "flags: [interval]", "flags: ["+elems(16, "interval")+"]", 1), // other type, given twice
		strings.Replace(nftFile(good), "flags: [interval]", "flags: ["+elems(16, "x%d")+"]", 1),
		"version: 1\nnote: |\n  elements: [" + good + "]\n",
		"version: 1\nnftables:\n  ip t:\n    sets:\n      s:\n        type: ipv4_addr\n        elements:\n          - [" + good + "]\n",
		"version: 1\nnftables:\n  ip t:\n    sets:\n      s: {type: ipv4_addr, elements: [" + good + "]}\n",
		"version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    private-key-file: /nonexistent\n    peers:\n      - {public-key: x, allowed-ips: [" + elems(20, "10.1.%d.0/24") + "]}\n",
		"version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    private-key-file: /nonexistent\n    peers:\n      - public-key: x\n        allowed-ips: [" + elems(20, "10.1.%d.0/24") + "]\n",
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

// Long element lists are cut; a list inside a block scalar is cut, but not
// found in the tree, so the file goes through the general decoder.
func TestFastFlowsApplies(t *testing.T) {
	good := elems(20, "10.0.%d.0/24")
	cut, flows := cutFlows([]byte(nftFile(good)))
	if len(flows) != 2 || len(cut) != len(nftFile(good)) {
		t.Fatalf("not cut: %d flows", len(flows))
	}
	errs := &errList{}
	if fc := decodeYAMLCut("f.yaml", cut, flows, errs); fc == nil || errs.count() != 0 {
		t.Fatalf("cut file not decoded: %v", errs.err())
	}
	f := "version: 1\nnote: |\n  elements: [" + good + "]\n"
	cut, flows = cutFlows([]byte(f))
	if len(flows) != 1 {
		t.Fatalf("not cut: %d flows", len(flows))
	}
	if fc := decodeYAMLCut("f.yaml", cut, flows, &errList{}); fc != nil {
		t.Fatalf("a cut inside a block scalar was taken for a sequence")
	}
}

// The flow parser builds the nodes yaml.v3 builds, or refuses the text.
func TestFlowNodesMatchYAML(t *testing.T) {
	accepted := 0
	for _, v := range []string{
		"[a, b, c]", "[10.0.0.0/8, fd00::/64, fe80::1]", "{a: b, c: 1, d: true, e: 1.5, f: 0x10, g: 2001-12-14, h: -1}",
		"{public-key: abc+/=, allowed-ips: [10.0.0.1/32, \"fd00::1/128\"], persistent-keepalive: 25s, endpoints: ['192.0.2.1:51820']}",
		"[[a, b], {c: d}, []]", "{a: {}, b: [], c: {d: {e: [f]}}}", "[ a ,  b  ]", "{ a: b }", "[yes, no, on, off, Null, ~, y]",
		"[a b]", "[a, ]", "[a, null]", "{a: null}", "[a:b, c]", "{a:b}", "[\"a\\b\"]", "['a''b']", "[a, #b]", "[a, *b]", "[-1, -a, .5]",
		"{a: b, a: c}", "[a, b", "{a: [b}", "[\"\", '']", "{1: a, true: b}", "[<<, a]", "[+a, /b, a=, =a, a+b=, 1/2, 1=2, 0x1/, 2001-12-14/, 1e3=, 25s, 0x10, 1_000, 0b101, 0o17, 1.5e3, 2001-12-14t21:59:43.10-05:00]", "{k: yO/W+1rA6/xDsIaPbtDBR7A3YUD3AjTQAxgWUdYqbWc=}",
	} {
		var doc yaml.Node
		yerr := yaml.Unmarshal([]byte("k: "+v), &doc)
		fc, ok := scanFlow([]byte(v))
		if !ok {
			continue
		}
		accepted++
		if yerr != nil {
			t.Errorf("%s: accepted, yaml.v3 says %v", v, yerr)
			continue
		}
		fc.line, fc.col, fc.nodeCol = 1, 4, 4
		want := doc.Content[0].Content[1]
		if got := fc.build(map[string]string{}); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: built\n%#v\nyaml.v3 built\n%#v", v, got, want)
		}
		if n := countNodes(want); fc.nodes != n {
			t.Errorf("%s: counted %d nodes, yaml.v3 made %d", v, fc.nodes, n)
		}
		// Anchored, the node is where its anchor is.
		var adoc yaml.Node
		if err := yaml.Unmarshal([]byte("k: &a-1_ "+v), &adoc); err != nil {
			t.Errorf("%s anchored: %v", v, err)
			continue
		}
		fc, _ = scanFlow([]byte(v))
		fc.line, fc.col, fc.nodeCol, fc.anchor = 1, 10, 4, "a-1_"
		if got, want := fc.build(map[string]string{}), adoc.Content[0].Content[1]; !reflect.DeepEqual(got, want) {
			t.Errorf("&a-1_ %s: built\n%#v\nyaml.v3 built\n%#v", v, got, want)
		}
		line := []byte("k: &a-1_ " + v)
		if open, anchor := flowStart(line); open != 9 || anchor != 3 {
			t.Errorf("%s: flowStart %d %d, want 9 3", line, open, anchor)
		}
	}
	if accepted < 10 {
		t.Errorf("only %d accepted", accepted)
	}
}

func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}
