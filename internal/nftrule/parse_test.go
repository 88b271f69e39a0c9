package nftrule

import "testing"

func TestParseCanonical(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"meta mark & 0x60 == 0x20 accept", "meta mark & 0x00000060 == 0x00000020 accept"},
		{"mark 0x40", "meta mark 0x00000040"},
		{"meta mark != 1 drop", "meta mark != 0x00000001 drop"},
		{"ip daddr @kubespan_targets_ipv4 meta mark set meta mark & 0xffffffdf | 0x40 accept",
			"ip daddr @kubespan_targets_ipv4 meta mark set meta mark & 0xffffffdf | 0x00000040 accept"},
		{"meta mark set 0x10", "meta mark set 0x00000010"},
		{`oifname "lo"   accept`, `oifname "lo" accept`},
		{`meta iifname != "eth*" return`, `iifname != "eth*" return`},
		{"ip saddr != 10.0.0.1/32 masquerade", "ip saddr != 10.0.0.1 masquerade"},
		{"ip6 saddr fd00::/8 counter", "ip6 saddr fd00::/8 counter"},
		{"meta l4proto udp udp dport 53 accept", "meta l4proto udp udp dport 53 accept"},
		{"tcp sport != 1000-2000 log prefix \"x \" level info", "tcp sport != 1000-2000 log prefix \"x \" level info"},
		{"log prefix \"y\" group 2", "log prefix \"y\" group 2"},
		{"tcp flags syn tcp option maxseg size set rt mtu", "tcp flags syn tcp option maxseg size set rt mtu"},
		{"ct state related,established jump other", "ct state established,related jump other"},
		{"ip daddr 1.2.3.4 tcp dport 80 dnat to 10.0.0.1:8080", "ip daddr 1.2.3.4 tcp dport 80 dnat ip to 10.0.0.1:8080"},
		{"snat ip6 to [fd00::1]:53", "snat ip6 to [fd00::1]:53"},
		{"meta nfproto ipv6 goto c2", "meta nfproto ipv6 goto c2"},
	} {
		r, err := Parse(tc.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.in, err)
			continue
		}
		if got := r.String(); got != tc.want {
			t.Errorf("Parse(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if r2, err := Parse(r.String()); err != nil || r2.ID() != r.ID() {
			t.Errorf("canonical text of %q does not parse to the same rule: %v", tc.in, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		in   string
		off  int
		want string
	}{
		{"", 0, "empty rule"},
		{"ip daddr 10.0.0.0/33 accept", 9, "expected an IPv4 address, prefix or @set"},
		{"ip daddr 10.0.0.1/8", 9, "has host bits set"},
		{"ip6 daddr 10.0.0.0/8", 10, "expected an IPv6 address"},
		{"meta mark & 0x60 == 0x80", 5, "bits outside mask"},
		{"accept drop", 7, "nothing may follow a verdict"},
		{"tcp dport http", 10, "expected a port"},
		{"ct state old", 9, "expected a connection state"},
		{"frobnicate", 0, "unknown word \"frobnicate\""},
		{`oifname "lo`, 8, "unterminated string"},
		{"tcp option maxseg size set 100", 27, "expected an MSS"},
		{"jump", 4, "expected a chain name"},
		// The kernel refuses level and group together with EINVAL, which
		// failed the whole nftables batch at apply.
		{"log level warn group 3", 15, "log takes a level or a group, not both"},
		{"log group 3 level warn", 12, "log takes a level or a group, not both"},
		{`log level audit prefix "x"`, 16, "log level audit takes no prefix"},
	} {
		_, err := Parse(tc.in)
		e, ok := err.(*Error)
		if !ok {
			t.Errorf("Parse(%q): error %v, want a positioned error", tc.in, err)
			continue
		}
		if e.Offset != tc.off || !contains(e.Error(), tc.want) {
			t.Errorf("Parse(%q): offset %d %q, want offset %d containing %q", tc.in, e.Offset, e.Error(), tc.off, tc.want)
		}
	}
}

func TestCheck(t *testing.T) {
	ctx := Context{Family: "inet", ChainType: "filter", Hook: "prerouting",
		Sets: map[string]string{"t4": "ipv4_addr", "ports": "inet_service"}, Chains: map[string]bool{"base": true, "reg": false}}
	nat := ctx
	nat.ChainType, nat.Hook = "nat", "postrouting"
	ip6 := ctx
	ip6.Family = "ip6"
	for _, tc := range []struct {
		in   string
		ctx  Context
		want string // "" for valid
	}{
		{"ip daddr @t4 accept", ctx, ""},
		{"tcp dport @ports accept", ctx, ""},
		{"ip6 daddr @t4 accept", ctx, "holds ipv4_addr"},
		{"ip daddr @nope", ctx, "no set \"nope\""},
		{"jump reg", ctx, ""},
		{"jump base", ctx, "is a base chain"},
		{"goto gone", ctx, "no chain \"gone\""},
		{"masquerade", ctx, "needs a base chain of type nat"},
		{"oifname \"eth0\" ip saddr != 10.0.0.1 masquerade", nat, ""},
		{"snat to 10.0.0.1:80", nat, "needs a tcp or udp match"},
		{"tcp option maxseg size set rt mtu", ctx, "rt mtu is only known"},
		{"ip saddr 10.0.0.1", ip6, "need a table of family ip or inet"},
		{"ip saddr 0.0.0.0/0", ctx, "matches every address"},
	} {
		r, err := Parse(tc.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tc.in, err)
		}
		err = Check(r, tc.ctx)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("Check(%q): %v", tc.in, err)
		case tc.want != "" && (err == nil || !contains(err.Error(), tc.want)):
			t.Errorf("Check(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
