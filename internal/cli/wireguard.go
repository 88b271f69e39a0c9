package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
)

// wireguard genkey|pubkey make and derive keys as wg(8) does, with wgctrl's
// Go implementation (X25519 of golang.org/x/crypto), so that a host (and the
// Ansible key module) needs no wireguard-tools to make its key: the key is
// made where it is used and leaves the process on standard output only.

// maxKeyInput bounds what pubkey reads: a key is 44 characters, and a
// larger input is not one, whatever follows.
const maxKeyInput = 1 << 10

func runWireGuard(_ context.Context, env *Env, args []string) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, wireguardHelp)
		return ExitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(env.Stdout, wireguardHelp)
		return ExitOK
	case "genkey", "pubkey":
	default:
		fmt.Fprintf(env.Stderr, "netreconcile wireguard: unknown command %q; commands: genkey, pubkey\n", args[0])
		return ExitUsage
	}
	if len(args) > 1 {
		if args[1] == "-h" || args[1] == "--help" {
			fmt.Fprint(env.Stdout, wireguardHelp)
			return ExitOK
		}
		fmt.Fprintf(env.Stderr, "netreconcile wireguard %s: unexpected argument %q (see 'netreconcile help wireguard')\n", args[0], args[1])
		return ExitUsage
	}
	if args[0] == "genkey" {
		return wireguardGenkey(env)
	}
	return wireguardPubkey(env)
}

func wireguardGenkey(env *Env) int {
	k, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		return fail(env, "wireguard genkey", fmt.Errorf("generate a private key: %w", err))
	}
	// As wg genkey: a key about to land in a file others can read is
	// still written (the caller chose the file), with a warning. Stdout
	// is a filter (package inert, harmless to base64); jsonOut is the
	// stream itself.
	raw := env.jsonOut
	if raw == nil {
		raw = env.Stdout
	}
	if f, ok := raw.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o007 != 0 {
			fmt.Fprintln(env.Stderr, "netreconcile wireguard genkey: warning: writing to a file others can read; set the umask to 077 and try again")
		}
	}
	if _, err := fmt.Fprintln(env.Stdout, k.String()); err != nil {
		return fail(env, "wireguard genkey", fmt.Errorf("write the key: %w", err))
	}
	return ExitOK
}

func wireguardPubkey(env *Env) int {
	in := env.Stdin
	if in == nil {
		in = os.Stdin
	}
	b, err := io.ReadAll(io.LimitReader(in, maxKeyInput+1))
	if err != nil {
		return fail(env, "wireguard pubkey", fmt.Errorf("read standard input: %w", err))
	}
	// The error never holds the input: it may be a key in the wrong form.
	k, err := wgtypes.ParseKey(string(bytes.TrimSpace(b)))
	if err != nil || len(b) > maxKeyInput {
		fmt.Fprintln(env.Stderr, "netreconcile wireguard pubkey: standard input holds no WireGuard private key (44 characters of base64, as wg genkey writes it)")
		return ExitError
	}
	if _, err := fmt.Fprintln(env.Stdout, k.PublicKey().String()); err != nil {
		return fail(env, "wireguard pubkey", fmt.Errorf("write the public key: %w", err))
	}
	return ExitOK
}
