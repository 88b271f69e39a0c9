package desired

import (
	"strings"
	"testing"
)

// A key pasted where a file name belongs is refused without being quoted.
func TestKeyInsteadOfFileIsNotEchoed(t *testing.T) {
	const key = "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
	for _, field := range []string{"private-key-file", "private-key-credential"} {
		got := errorsOf(t, src("f.yaml", "version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard: {"+field+": "+key+"}\n"))
		if strings.Contains(got, key) || strings.Contains(got, key[:20]) {
			t.Errorf("%s: the key is echoed: %s", field, got)
		}
		if !strings.Contains(got, "links.wg0.wireguard."+field+": this looks like a key itself") {
			t.Errorf("%s: %s", field, got)
		}
	}
}
