package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// wg runs `netreconcile wireguard ARGS` with stdin and stdout as given.
func wgRun(t *testing.T, stdin string, stdout *os.File, args ...string) (code int, out, errs string) {
	t.Helper()
	var o, e bytes.Buffer
	env := &cli.Env{Stdout: &o, Stderr: &e, Stdin: strings.NewReader(stdin), Getenv: func(string) string { return "" }}
	if stdout != nil {
		env.Stdout = stdout
	}
	code = cli.Run(context.Background(), env, append([]string{"wireguard"}, args...))
	return code, o.String(), e.String()
}

func b64(t *testing.T, h string) string {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(b)
}

// TestWireGuardPubkeyRFC7748: the public keys of RFC 7748's section 6.1
// (Alice's and Bob's X25519 key pairs), an oracle independent of the Go
// implementation; the private keys there are not clamped, so the command
// clamps as X25519 and wg pubkey do.
func TestWireGuardPubkeyRFC7748(t *testing.T) {
	for _, kp := range []struct{ priv, pub string }{
		{"77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"},
		{"5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"},
	} {
		for _, in := range []string{b64(t, kp.priv) + "\n", b64(t, kp.priv), "  " + b64(t, kp.priv) + " \r\n"} {
			code, out, errs := wgRun(t, in, nil, "pubkey")
			if code != 0 || out != b64(t, kp.pub)+"\n" || errs != "" {
				t.Errorf("pubkey %q: exit %d, %q (stderr %q), want %q", in, code, out, errs, b64(t, kp.pub))
			}
		}
	}
}

// TestWireGuardGenkey: a new key is 32 bytes in base64 on one line,
// clamped as X25519 wants, different on every run, and its public key is
// what the same command derives; nothing goes to standard error.
func TestWireGuardGenkey(t *testing.T) {
	seen := map[string]bool{}
	for range 20 {
		code, out, errs := wgRun(t, "", nil, "genkey")
		if code != 0 || errs != "" || !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
			t.Fatalf("genkey: exit %d, %q, stderr %q", code, out, errs)
		}
		k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(out))
		if err != nil || len(k) != 32 {
			t.Fatalf("genkey: %q is not 32 bytes of base64: %v", out, err)
		}
		if k[0]&7 != 0 || k[31]&128 != 0 || k[31]&64 == 0 {
			t.Errorf("genkey: %x is not clamped", k)
		}
		if seen[out] {
			t.Fatalf("genkey printed %q twice", out)
		}
		seen[out] = true
		if code, pub, errs := wgRun(t, out, nil, "pubkey"); code != 0 || len(strings.TrimSpace(pub)) != 44 || errs != "" {
			t.Errorf("pubkey of a new key: exit %d, %q, %q", code, pub, errs)
		}
	}
}

// TestWireGuardAgreesWithWg: wg(8) derives the same public keys, from keys
// this command made, from keys wg genkey made and from unclamped bytes.
func TestWireGuardAgreesWithWg(t *testing.T) {
	nettest.RequireTool(t, "wg")
	wg := func(stdin string, args ...string) string {
		cmd := exec.Command("wg", args...)
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("wg %v: %v", args, err)
		}
		return string(out)
	}
	for i := range 30 {
		var priv string
		switch i % 3 {
		case 0:
			_, priv, _ = wgRun(t, "", nil, "genkey")
		case 1:
			priv = wg("", "genkey")
		case 2:
			b := make([]byte, 32)
			for j := range b {
				b[j] = byte(i*31 + j*7 + 255)
			}
			priv = base64.StdEncoding.EncodeToString(b) + "\n"
		}
		want := wg(priv, "pubkey")
		if code, got, _ := wgRun(t, priv, nil, "pubkey"); code != 0 || got != want {
			t.Errorf("pubkey of %d: %q, wg pubkey %q", i, got, want)
		}
	}
}

// TestWireGuardRefusesWithoutEcho: an input that is no private key fails
// (exit 1), and the error never holds the input, which may be a secret in
// another form.
func TestWireGuardRefusesWithoutEcho(t *testing.T) {
	key := b64(t, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a")
	for _, in := range []string{"", "\n", "not a key", key[:43], key + "A", key + key, strings.Repeat("A", 5000),
		hex.EncodeToString(make([]byte, 32)), "secret-" + key} {
		code, out, errs := wgRun(t, in, nil, "pubkey")
		if code != cli.ExitError || out != "" {
			t.Errorf("pubkey %.20q: exit %d, stdout %q", in, code, out)
		}
		for i := 0; i+8 <= len(in); i++ {
			if w := in[i : i+8]; strings.TrimSpace(w) == w && strings.Contains(errs, w) {
				t.Errorf("pubkey %.20q: the error shows the input (%q): %q", in, w, errs)
				break
			}
		}
	}
}

// TestWireGuardGenkeyWarns: as wg genkey, a key written to a file others
// can read comes with a warning on standard error (and is still written);
// a private file gets none.
func TestWireGuardGenkeyWarns(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mode os.FileMode
		warn bool
	}{{0o644, true}, {0o604, true}, {0o640, false}, {0o600, false}} {
		f, err := os.OpenFile(filepath.Join(dir, c.mode.String()), os.O_CREATE|os.O_WRONLY, c.mode)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Chmod(c.mode); err != nil {
			t.Fatal(err)
		}
		code, _, errs := wgRun(t, "", f, "genkey")
		f.Close()
		if code != 0 || strings.Contains(errs, "warning") != c.warn {
			t.Errorf("genkey to a %v file: exit %d, stderr %q, want a warning: %v", c.mode, code, errs, c.warn)
		}
		b, _ := os.ReadFile(f.Name())
		if len(strings.TrimSpace(string(b))) != 44 {
			t.Errorf("genkey to a %v file wrote %q", c.mode, b)
		}
	}
}

// TestWireGuardUsage: a missing or unknown subcommand, or an argument, is
// a usage error that prints nothing on standard output.
func TestWireGuardUsage(t *testing.T) {
	for _, args := range [][]string{{}, {"genpsk"}, {"genkey", "x"}, {"pubkey", "/etc/key"}} {
		if code, out, _ := wgRun(t, "", nil, args...); code != cli.ExitUsage || out != "" {
			t.Errorf("wireguard %v: exit %d, stdout %q", args, code, out)
		}
	}
	if code, out, _ := wgRun(t, "", nil, "--help"); code != 0 || !strings.Contains(out, "genkey") {
		t.Errorf("wireguard --help: exit %d, %q", code, out)
	}
}
