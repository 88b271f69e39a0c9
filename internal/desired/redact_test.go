package desired

import (
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// Issue 12 finding 12: a key typed into any field (its value or its name),
// or as a file name with a trailing space, is never quoted in an error.
// Generated: every scalar of the example configurations and of a
// WireGuard file is replaced in turn by a key in each form.
func TestKeyInAnyFieldNeverQuoted(t *testing.T) {
	dir := t.TempDir()
	keyFile := writeKey(t, dir, "wg.key", testKey+"\n", 0o600)
	wg := `version: 1
links:
  wg0:
    kind: wireguard
    mtu: 1420
    wireguard:
      private-key-file: ` + keyFile + `
      listen-port: 51820
      fwmark: 0x20
      peers:
        - public-key: ` + peerKey + `
          allowed-ips: [10.244.1.0/24]
          persistent-keepalive: 25s
          endpoints: ["192.168.1.2:51820"]
    addresses: [10.0.0.1/24]
routes:
  - {to: 10.1.0.0/16, via: 10.0.0.2, table: 100, metric: 5}
rules:
  - {priority: 100, fwmark: 0x20, table: 100}
`
	srcs := map[string][]byte{"wg.yaml": []byte(wg)}
	examples, _ := filepath.Glob("../../examples/*.yaml")
	for _, p := range examples {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		srcs[filepath.Base(p)] = data
	}
	raw, _ := hexKey()
	variants := []string{testKey, testKey + " ", " " + testKey, strings.TrimSuffix(testKey, "="), raw}
	errorsSeen, cases := 0, 0
	for name, data := range srcs {
		var doc yaml.Node
		if err := yaml.Unmarshal(data, &doc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var scalars []*yaml.Node
		var walk func(n *yaml.Node)
		walk = func(n *yaml.Node) {
			if n.Kind == yaml.ScalarNode {
				scalars = append(scalars, n)
			}
			for _, c := range n.Content {
				walk(c)
			}
		}
		walk(&doc)
		for _, s := range scalars {
			if s.Value == "version" || s.Value == "1" && s.Line <= 1 {
				continue
			}
			orig, origStyle := s.Value, s.Style
			for _, v := range variants {
				s.Value, s.Style = v, yaml.DoubleQuotedStyle
				out, err := yaml.Marshal(&doc)
				if err != nil {
					t.Fatal(err)
				}
				cases++
				_, perr := Parse([]Source{{Name: filepath.Join(dir, name), Data: out}})
				if perr == nil {
					continue
				}
				errorsSeen++
				msg := perr.Error()
				for _, part := range []string{strings.TrimSpace(v)[:12], strings.TrimSpace(v)[20:32]} {
					if strings.Contains(msg, part) {
						t.Errorf("%s: %s at line %d replaced by a key: the error shows it:\n%s", name, orig, s.Line, msg)
					}
				}
			}
			s.Value, s.Style = orig, origStyle
		}
	}
	// The test means something only if keys in wrong places make errors.
	if cases < 100 || errorsSeen < cases/2 {
		t.Fatalf("%d cases, %d errors: the generator is broken", cases, errorsSeen)
	}
	t.Logf("%d fields×forms tried, %d errors, none quoting the key", cases, errorsSeen)
}

func hexKey() (string, error) {
	return hex.EncodeToString([]byte("0123456789abcdef0123456789abcdef")), nil
}
