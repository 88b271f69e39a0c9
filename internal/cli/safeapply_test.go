package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseWithID(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		id     string
		output string
		code   int
		ok     bool
	}{
		{args: nil, ok: true, output: "text"},
		{args: []string{"T1"}, id: "T1", ok: true, output: "text"},
		{args: []string{"-o", "json", "T1"}, id: "T1", ok: true, output: "json"},
		{args: []string{"T1", "-o", "json"}, id: "T1", ok: true, output: "json"},
		{args: []string{"T1", "T2"}, code: ExitUsage},
		{args: []string{"--bogus"}, code: ExitUsage},
		{args: []string{"-h"}, code: ExitOK},
	} {
		var g globals
		var output string
		fs := g.flags("confirm")
		outputFlag(fs, &output)
		var out, errb bytes.Buffer
		env := &Env{Stdout: &out, Stderr: &errb}
		id, ok, code := parseWithID(env, fs, confirmHelp, tc.args)
		if ok != tc.ok || (ok && (id != tc.id || output != tc.output)) || (!ok && code != tc.code) {
			t.Errorf("%q: id %q output %q ok %v code %d; want %q %q %v %d\n%s", tc.args, id, output, ok, code, tc.id, tc.output, tc.ok, tc.code, errb.String())
		}
	}
}

// The safe-apply options need --confirm-within, and its value must be
// positive: usage errors, before anything is opened.
func TestApplyUsage(t *testing.T) {
	for _, args := range [][]string{
		{"apply", "--probe", "gateway"},
		{"apply", "--candidate", "x.yaml"},
		{"apply", "--rollback-timer", "process"},
		{"apply", "--confirm-within", "-1s"},
		{"apply", "--confirm-within", "1m", "--probe", "icmp:1.2.3.4"},
		{"apply", "--confirm-within", "1m", "--rollback-timer", "cron"},
		{"apply", "-o", "yaml"},
	} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }},
			append(args, "-c", "/nonexistent/nr.yaml", "--state-dir", t.TempDir()))
		if code != ExitUsage {
			t.Errorf("%q: exit %d, want %d\n%s", args, code, ExitUsage, errb.String())
		}
	}
	if !strings.Contains(applyHelp, "--confirm-within") || !strings.Contains(mainHelp, "confirm") {
		t.Error("help lacks safe apply")
	}
}

// --confirm-within 0 was a plain apply: the change applied with no
// transaction and nothing to roll it back, exit 0. It is a usage error,
// like a negative window, and touches nothing.
func TestTxWalkFinding127ConfirmWithinZeroIsRefused(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\nlinks:\n  br0: {kind: bridge}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"0", "0s", "0m"} {
		var out, errb bytes.Buffer
		code := Run(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }},
			[]string{"apply", "--confirm-within", w, "-c", conf, "--state-dir", filepath.Join(dir, "state"), "--netns", "nrtest-no-such-netns"})
		if code != ExitUsage || !strings.Contains(errb.String(), "--confirm-within must be positive") {
			t.Errorf("--confirm-within %s: exit %d, want %d\n%s%s", w, code, ExitUsage, out.String(), errb.String())
		}
	}
}
