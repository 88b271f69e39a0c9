package ledger

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// roundTrip decodes a file, takes its records as OpenIn does and encodes
// them as Save does.
func roundTrip(b []byte) (*Ledger, []byte, error) {
	f, err := decode(b)
	if err != nil {
		return nil, nil, err
	}
	l := newLedger(nil, f.NetnsCookie)
	l.load(f)
	_, out, err := l.encode()
	return l, out, err
}

// A ledger as netreconcile writes it is read and written back byte for
// byte, tombstones (a dropped record's number) and handles included.
func TestLedgerWritesBackUnchanged(t *testing.T) {
	b, err := os.ReadFile("testdata/ledger.json")
	if err != nil {
		t.Fatal(err)
	}
	_, out, err := roundTrip(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out, b) {
		t.Fatalf("written back differently:\n%s", out)
	}
}

// Issue 29: every record is checked on load; a ledger with one forged
// record is refused whole, naming it and quoting nothing.
func TestLedgerRefusesForgedRecords(t *testing.T) {
	b, err := os.ReadFile("testdata/ledger.json")
	if err != nil {
		t.Fatal(err)
	}
	const evil = "x\x1b]2;owned\x07"
	for _, tt := range []struct {
		field string
		forge func(f map[string]any)
	}{
		{"sysctls[0].key", func(f map[string]any) { sysctl(f)["key"] = "net.//.kernel.core_pattern" }},
		{"sysctls[0].key", func(f map[string]any) { sysctl(f)["key"] = "kernel.core_pattern" }},
		{"sysctls[0].original", func(f map[string]any) { sysctl(f)["original"] = evil }},
		{"sysctls[0].original", func(f map[string]any) { sysctl(f)["original"] = strings.Repeat("1", 4097) }},
		{"links_pending[1]", func(f map[string]any) { f["links_pending"].([]any)[1] = evil }},
		{"links_pending[1]", func(f map[string]any) { f["links_pending"].([]any)[1] = "../../etc" }},
		{"links_pending[1]", func(f map[string]any) { f["links_pending"].([]any)[1] = "eth0 up" }},
		{"nftables[0].name", func(f map[string]any) { table(f)["name"] = evil }},
		{"nftables[0].name", func(f map[string]any) { table(f)["name"] = "t; flush ruleset" }},
		{"nftables[0].family", func(f map[string]any) { table(f)["family"] = "inet6" }},
		{"fou_ports[0].port", func(f map[string]any) { f["fou_ports"].([]any)[0].(map[string]any)["port"] = 0 }},
		{"seqs", func(f map[string]any) { f["seqs"].(map[string]any)[evil] = 1 }},
		{"seqs", func(f map[string]any) { f["seqs"].(map[string]any)["link br0"] = 13 }},
		{"seq", func(f map[string]any) { f["seq"] = uint64(1) << 63 }},
		{"route_tables[1].protocol", func(f map[string]any) { routeTables(f)["protocol"] = 0 }},
		{"route_tables[1].protocol", func(f map[string]any) { routeTables(f)["protocol"] = 256 }},
		{"route_tables[1].protocol", func(f map[string]any) { routeTables(f)["protocol"] = 200 }},
		{"route_tables[1].tables[0]", func(f map[string]any) { routeTables(f)["tables"].([]any)[0] = 0 }},
		{"route_tables[1].tables[0]", func(f map[string]any) { routeTables(f)["tables"].([]any)[0] = 1 << 32 }},
		{"route_tables[1].tables[0]", func(f map[string]any) { routeTables(f)["tables"].([]any)[0] = -5 }},
		{"seqs", func(f map[string]any) { f["seqs"].(map[string]any)["routes 245 0100"] = 1 }},
		{"seqs", func(f map[string]any) { f["seqs"].(map[string]any)["routes 0 100"] = 1 }},
		{"static_addresses[0].link", func(f map[string]any) { static(f)["link"] = evil }},
		{"static_addresses[0].link", func(f map[string]any) { static(f)["link"] = "br0 up" }},
		{"static_addresses[0].prefix", func(f map[string]any) { static(f)["prefix"] = "10.99.0.0" }},
		{"static_addresses[0].prefix", func(f map[string]any) { static(f)["prefix"] = "10.99.0.00/24" }},
		{"static_addresses[0].prefix", func(f map[string]any) { static(f)["prefix"] = "fe80::1%eth0/64" }},
		{"seqs", func(f map[string]any) { f["seqs"].(map[string]any)["addr br0 10.99.0.0"] = 1 }},
	} {
		var f map[string]any
		if err := json.Unmarshal(b, &f); err != nil {
			t.Fatal(err)
		}
		tt.forge(f)
		forged, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = roundTrip(forged)
		if err == nil {
			t.Errorf("%s forged: loaded", tt.field)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tt.field) || strings.ContainsAny(msg, "\x1b\x07") || strings.Contains(msg, "core_pattern") || strings.Contains(msg, "flush") {
			t.Errorf("%s forged: %q", tt.field, msg)
		}
	}
}

func sysctl(f map[string]any) map[string]any { return f["sysctls"].([]any)[0].(map[string]any) }
func table(f map[string]any) map[string]any  { return f["nftables"].([]any)[0].(map[string]any) }
func static(f map[string]any) map[string]any {
	return f["static_addresses"].([]any)[0].(map[string]any)
}
func routeTables(f map[string]any) map[string]any {
	return f["route_tables"].([]any)[1].(map[string]any)
}

// FuzzDecode: the ledger's parser never panics, refuses what it cannot
// take whole, and what it accepts is written back as a file it reads
// again to the same records and writes back byte for byte (the new form,
// what Save writes, is a fixed point). The file is bounded by maxSize
// before it is parsed (statedir.ReadFile), so memory and time are too.
func FuzzDecode(f *testing.F) {
	b, err := os.ReadFile("testdata/ledger.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"version":1,"fou_ports":[]}`))
	f.Add([]byte(`{"version":1,"fou_ports":[{"port":1,"ipv6":true},{"port":1,"ipv6":true}],"links_pending":["a","a"],"seqs":{"link a":0}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > maxSize {
			return
		}
		l, out, err := roundTrip(b)
		if err != nil {
			return
		}
		l2, again, err := roundTrip(out)
		if err != nil {
			t.Fatalf("%q was accepted; written back as %q, which is refused: %v", b, out, err)
		}
		if !recordsEqual(l.records(), l2.records()) || l.cookie != l2.cookie {
			t.Fatalf("%q: written back as %q, which reads to other records", b, out)
		}
		if !bytes.Equal(out, again) {
			t.Fatalf("%q: written back as %q, then as %q", b, out, again)
		}
	})
}
