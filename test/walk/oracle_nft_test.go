package walk

import "testing"

func TestParseNftHandles(t *testing.T) {
	h := parseNftHandles(`table inet t { # handle 1
	set s { # handle 2
		type ipv4_addr
		timeout 30s
		elements = { 1.2.3.4 expires 29s964ms }
	}

	chain c { # handle 1
		type filter hook input priority filter; policy accept;
		counter packets 0 bytes 0 accept # handle 3
		ip saddr @s drop # handle 4
	}
}
table netdev n { # handle 2
	chain i { # handle 1
		type filter hook ingress device "lo" priority filter; policy accept;
	}
}
`)
	want := nftHandles{
		"inet t": "1", "inet t set s": "2", "inet t chain c": "1",
		"inet t chain c rule handle 3": "counter accept", "inet t chain c rule handle 4": "ip saddr @s drop",
		"netdev n": "2", "netdev n chain i": "1",
	}
	if len(h) != len(want) {
		t.Errorf("got %v, want %v", h, want)
	}
	for k, v := range want {
		if h[k] != v {
			t.Errorf("%s: %q, want %q", k, h[k], v)
		}
	}
}
