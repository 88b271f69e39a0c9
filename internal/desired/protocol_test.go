package desired

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A protocol number named by the kernel or by an iproute2 file (or its
// drop-in directory) is refused unless the file overrides; an unnamed one
// is taken.
func TestProtocolNamedElsewhere(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "rt_protos")
	if err := os.WriteFile(main, []byte("# comment\n0x c8\t mine\n201 theirs # trailing\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(main+".d", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(main+".d", "x.conf"), []byte("0xca\tdropin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := protocolFiles
	protocolFiles = []string{filepath.Join(dir, "missing"), main}
	defer func() { protocolFiles = old }()
	for _, tc := range []struct {
		settings, want string
	}{
		{"protocol: 186", `f.yaml:3:13: settings.protocol: protocol 186 is "bgp" in the kernel's list of route protocols`},
		{"protocol: 17", `protocol 17 is "mrouted" in the kernel's list`},
		{"protocol: 201", `protocol 201 is "theirs" in ` + main + ":"},
		{"protocol: 202", `protocol 202 is "dropin" in ` + filepath.Join(main+".d", "x.conf")},
		{"protocol: 200", ""}, // "0x c8" is not a number
		{"protocol: 246", ""},
		{"protocol: 186\n  protocol-override: true", ""},
	} {
		got := errorsOf(t, src("f.yaml", "version: 1\nsettings:\n  "+tc.settings+"\n"))
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.settings, got, tc.want)
		}
	}
}
