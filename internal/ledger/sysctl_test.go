package ledger

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The old value of a sysctl survives a save and a reload; the first value
// recorded stays; a ledger written before sysctls reads as having none.
func TestSysctlsRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "ledger.json")
	l, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	l.SetSysctl("net.ipv4.ip_forward", "0")
	l.SetSysctl("net.ipv4.ip_forward", "1") // not the first: ignored
	l.SetSysctl("net.ipv4.ip_local_port_range", "32768 60999")
	l.SetSysctl("net.ipv4.conf.eth0/100.rp_filter", "2")
	l.ForgetSysctl("net.ipv4.conf.eth0/100.rp_filter")
	if err := l.Save(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"sysctls": [`) {
		t.Errorf("ledger file:\n%s", data)
	}
	l2, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(l2.Sysctls) != 2 || l2.Sysctls["net.ipv4.ip_forward"] != "0" || l2.Sysctls["net.ipv4.ip_local_port_range"] != "32768 60999" {
		t.Errorf("read back %v", l2.Sysctls)
	}
	// Another writer forgets a key; Reload sees it.
	l2.ForgetSysctl("net.ipv4.ip_forward")
	if err := l2.Save(); err != nil {
		t.Fatal(err)
	}
	if err := l.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Sysctls["net.ipv4.ip_forward"]; ok || len(l.Sysctls) != 1 {
		t.Errorf("after reload %v", l.Sysctls)
	}
	// An older ledger, without the field.
	if err := os.WriteFile(p, []byte(`{"version": 1, "fou_ports": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	l3, err := openPath(p)
	if err != nil || l3.Sysctls == nil || len(l3.Sysctls) != 0 {
		t.Errorf("older ledger: %v, %v", l3, err)
	}
}
