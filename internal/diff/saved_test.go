package diff_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

var testSalt = strings.Repeat("ab", 32)

// savedWG is a plan of a WireGuard device with a preshared-key peer, the
// secrets read from files in dir.
func savedWG(t testing.TB, dir string, key, psk []byte) (*diff.SavedPlan, *model.State) {
	t.Helper()
	for name, b := range map[string][]byte{"wg.key": key, "peer.psk": psk} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(base64.StdEncoding.EncodeToString(b)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	y := "version: 1\nlinks:\n  wg0:\n    kind: wireguard\n    wireguard:\n      private-key-file: wg.key\n      peers:\n" +
		"        - {public-key: " + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)) + ", preshared-key-file: peer.psk, allowed-ips: [10.0.0.2/32]}\n"
	cfg, err := desired.Parse([]desired.Source{{Name: filepath.Join(dir, "n.yaml"), Data: []byte(y)}})
	if err != nil {
		t.Fatal(err)
	}
	act := newKernel().st
	plan, err := diff.Compute(cfg.State, act)
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := diff.SecretInputs(testSalt, cfg.State)
	if err != nil {
		t.Fatal(err)
	}
	inputs = append([]diff.PlanInput{{Role: diff.InputConfig, Path: filepath.Join(dir, "n.yaml"), Digest: diff.FileDigest([]byte(y))}}, inputs...)
	s, err := diff.Save(plan, act, testSalt, diff.PlanTarget{Host: "h", StateDir: "/var/lib/netreconcile", Config: filepath.Join(dir, "n.yaml")}, inputs, nil, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg.State
}

// A saved plan holds no secret, in any encoding, and tells a rotated one.
func TestSavedPlanHoldsNoSecret(t *testing.T) {
	dir := t.TempDir()
	key, psk := bytes.Repeat([]byte{0x41}, 32), bytes.Repeat([]byte{0x5a}, 32)
	key[0] &= 248
	s, _ := savedWG(t, dir, key, psk)
	var b bytes.Buffer
	if err := s.Encode(&b); err != nil {
		t.Fatal(err)
	}
	for _, secret := range [][]byte{key, psk} {
		for _, form := range []string{base64.StdEncoding.EncodeToString(secret), hex.EncodeToString(secret), string(secret)} {
			if strings.Contains(b.String(), form) {
				t.Fatalf("the plan holds a secret (%s):\n%s", form, b.String())
			}
		}
	}
	secrets := 0
	for _, in := range s.Inputs {
		if in.Role == diff.InputSecret {
			secrets++
		}
	}
	if secrets != 2 {
		t.Fatalf("%d secret inputs, want 2: %+v", secrets, s.Inputs)
	}
	back, err := diff.DecodeSaved(&b)
	if err != nil {
		t.Fatal(err)
	}
	if d := back.Differences(s); len(d) != 0 {
		t.Fatalf("a plan differs from itself read back: %v", d)
	}
	// The preshared key rotated: named, its content not shown.
	psk2 := bytes.Repeat([]byte{0x5b}, 32)
	s2, _ := savedWG(t, dir, key, psk2)
	d := strings.Join(s.Differences(s2), "\n")
	if !strings.Contains(d, "preshared-key-file ("+filepath.Join(dir, "peer.psk")+"): changed (its content is not shown)") {
		t.Errorf("differences:\n%s", d)
	}
	if !strings.Contains(d, "what it writes changed") {
		t.Errorf("the peer op writing the new key is not named:\n%s", d)
	}

	// The private key rotated: its public key, in the device op's text,
	// changes too, but the output hides it, so the op is said to write
	// something else rather than shown as two lines that read the same.
	key2 := bytes.Repeat([]byte{0x42}, 32)
	key2[0] &= 248
	s3, _ := savedWG(t, dir, key2, psk)
	d = strings.Join(s.Differences(s3), "\n")
	if !strings.Contains(d, "private-key-file ("+filepath.Join(dir, "wg.key")+"): changed (its content is not shown)") ||
		!strings.Contains(d, "+ wireguard wg0 (public-key ") || !strings.Contains(d, "): what it writes changed") || strings.Contains(d, "planned as") {
		t.Errorf("differences after the private key rotated:\n%s", d)
	}
}

// A route op's digest leaves out where the file declares the route: a
// line added above it moves its origin, not what it writes.
func TestSavedRouteDigestLeavesOriginOut(t *testing.T) {
	save := func(y string) (*diff.SavedPlan, string) {
		t.Helper()
		cfg, err := desired.Parse([]desired.Source{{Name: "n.yaml", Data: []byte(y)}})
		if err != nil {
			t.Fatal(err)
		}
		act := newKernel().st
		plan, err := diff.Compute(cfg.State, act)
		if err != nil {
			t.Fatal(err)
		}
		s, err := diff.Save(plan, act, testSalt, diff.PlanTarget{Host: "h", StateDir: "/var/lib/netreconcile", Config: "n.yaml"}, nil, nil, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		return s, cfg.State.Routes[0].Origin.String()
	}
	const routes = "links:\n  br0: {kind: bridge}\nroutes:\n  - {to: 10.1.0.0/24, dev: br0, table: 100, metric: 7}\n"
	s1, at1 := save("version: 1\n" + routes)
	s2, at2 := save("version: 1\n# a comment above\n" + routes)
	if at1 == at2 || at1 != "n.yaml:5:5" {
		t.Fatalf("origins %q and %q: the case moves nothing", at1, at2)
	}
	if d := s1.Differences(s2); len(d) != 0 {
		t.Errorf("a route's origin moved and the plan differs:\n%s", strings.Join(d, "\n"))
	}
}

func TestDecodeSavedStrict(t *testing.T) {
	s, _ := savedWG(t, t.TempDir(), bytes.Repeat([]byte{8}, 32), bytes.Repeat([]byte{9}, 32))
	var b bytes.Buffer
	if err := s.Encode(&b); err != nil {
		t.Fatal(err)
	}
	good := b.String()
	for _, c := range []struct{ name, edit, want string }{
		{"unknown field", `"protocol": 245,` + "\n" + `"extra": 1,`, `unknown field "extra"`},
		{"key twice", `"protocol": 245,` + "\n" + `"protocol": 246,`, `key "protocol" twice`},
		{"a format of another tool", `"format": "terraform-plan",`, `format: expected "netreconcile-plan"`},
		{"another schema", `"schema_version": 2,`, "schema_version: expected 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var in string
			switch {
			case strings.HasPrefix(c.edit, `"format"`):
				in = strings.Replace(good, `"format": "netreconcile-plan",`, c.edit, 1)
			case strings.HasPrefix(c.edit, `"schema_version"`):
				in = strings.Replace(good, `"schema_version": 1,`, c.edit, 1)
			default:
				in = strings.Replace(good, `"protocol": 245,`, c.edit, 1)
			}
			if _, err := diff.DecodeSaved(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	for _, bad := range []string{good + "{}", good + "x", "[]", "null", `{"format": "netreconcile-plan"}`} {
		if _, err := diff.DecodeSaved(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %.60q", bad)
		}
	}
}

// FuzzDecodeSaved: no input panics; one accepted reads back the same.
func FuzzDecodeSaved(f *testing.F) {
	s, _ := savedWG(f, f.TempDir(), bytes.Repeat([]byte{8}, 32), bytes.Repeat([]byte{9}, 32))
	var b bytes.Buffer
	_ = s.Encode(&b)
	f.Add(b.Bytes())
	f.Add([]byte(`{"format":"netreconcile-plan","schema_version":1}`))
	f.Add([]byte(`{"a":{"a":[[[[{}]]]]},"a":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := diff.DecodeSaved(bytes.NewReader(data))
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := p.Encode(&out); err != nil {
			t.Fatal(err)
		}
		q, err := diff.DecodeSaved(&out)
		if err != nil {
			t.Fatalf("an accepted plan does not read back: %v", err)
		}
		if d := p.Differences(q); len(d) > 0 {
			t.Fatalf("read back differs: %v", d)
		}
	})
}

// An op's digest is what it writes, not where the file said it: the same
// configuration read from another directory (the Ansible module plans an
// inline configuration in a temporary one) or moved down a line plans the
// same digests, nftables rules and elements among them.
func TestOpDigestsIgnoreWhereTheFileSaysIt(t *testing.T) {
	y := "version: 1\nlinks:\n  d0: {kind: dummy, addresses: [10.9.0.1/24]}\nnftables:\n  inet f:\n" +
		"    sets:\n      s: {type: \"inet_service\", elements: [\"22\", \"80\"]}\n" +
		"    chains:\n      in:\n        rules: [\"tcp dport @s accept\", \"counter\"]\n"
	digests := func(name, text string) []string {
		cfg, err := desired.Parse([]desired.Source{{Name: name, Data: []byte(text)}})
		if err != nil {
			t.Fatal(err)
		}
		act := newKernel().st
		plan, err := diff.Compute(cfg.State, act)
		if err != nil {
			t.Fatal(err)
		}
		s, err := diff.Save(plan, act, testSalt, diff.PlanTarget{Host: "h"}, nil, nil, time.Unix(0, 0))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, op := range s.Ops {
			out = append(out, op.ID+" "+op.Digest)
		}
		return out
	}
	want := digests("/etc/netreconcile/netreconcile.yaml", y)
	if !slices.ContainsFunc(want, func(s string) bool { return strings.Contains(s, " rule 2 ") }) {
		t.Fatalf("the plan has no rule op to compare: %q", want)
	}
	for _, c := range []struct{ name, text string }{
		{"/tmp/ansible-x/netreconcile.yaml", y},
		{"/etc/netreconcile/netreconcile.yaml", "# moved\n" + strings.ReplaceAll(y, "[\"22\"", "[ \"22\"")},
	} {
		if got := digests(c.name, c.text); !slices.Equal(got, want) {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, want)
		}
	}
}
