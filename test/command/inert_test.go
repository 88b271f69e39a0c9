package command

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// hostile is what a less-privileged party writes where netreconcile reads:
// a terminal title and a screen clear (ESC), a bell, a carriage return and
// a newline that forge a line of a plan, a C1 CSI, a right-to-left
// override, a byte that is not UTF-8, and shell syntax.
const hostile = "\x1b]0;pwned\a\x1b[2J\r\n+ link evil \u009b31m\u202e $(touch PWNED);'\"`id`\xff"

// rawAt returns the offset of the first character of s a terminal would
// act on (any control but newline and tab, DEL, C1, a bidirectional
// override, a byte that is not UTF-8), or -1.
func rawAt(s string) int {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		case r == '\n' || r == '\t':
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return i
		}
	}
	return -1
}

// TestTextOutputIsInert feeds escape sequences through every command's
// text output, from the kernel (a link's name and aliases in a fresh
// namespace), from the state directory (a forged transaction.json) and from
// a file's path, and checks that nothing raw reaches the terminal, that no
// line is forged, and that a command printed for the user to run reads
// back in the shell as the same words (issue 29, "text output is inert").
func TestTextOutputIsInert(t *testing.T) {
	nettest.RequireRoot(t)
	h := newHost(t)
	// A file path holding escapes (the directory's name), a foreign
	// link named with them (Linux refuses only '/', ':' and white space
	// in a name, and 15 bytes), and an alias on it and on a link the
	// file adopts.
	dir := filepath.Join(h.dir, "conf\x1b[31m\a")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	evilName := "\x1b]0;x\aMARK$(x)"
	nettest.IP(t, h.ns, "link", "add", evilName, "type", "bridge")
	nettest.IP(t, h.ns, "link", "set", evilName, "alias", hostile)
	nettest.IP(t, h.ns, "link", "add", "adoptme", "type", "bridge")
	nettest.IP(t, h.ns, "link", "set", "adoptme", "alias", hostile)
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte(`version: 1
pools:
  p1:
    subnets: [10.2.0.0/28]
    block-size-bits: 2
links:
  adoptme: {kind: bridge, adopt: true, addresses: [{pool: p1}]}
  br0: {kind: bridge, alias: "from the file \e]0;t\a\r\n+ link evil"}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var outputs []result
	run := func(args ...string) result {
		t.Helper()
		r := h.run(args...)
		outputs = append(outputs, r)
		return r
	}
	run("validate", "-c", conf)
	// Errors name the file: its path holds escapes.
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 1\nlinks:\n  br0: {kind: brigde}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run("validate", "-c", bad)
	run("apply", "-c", bad)
	run("diff", "-c", conf)
	run("show", "-a", "-c", conf)
	run("status", "-c", conf)
	run("ipam", "allocate", "-c", conf, "--owner", "pid:1", "--iface", "eth0")
	run("ipam", "list", "-c", conf)
	run("ipam", "release", "-c", conf, "--owner", "pid:1", "--iface", "eth0")
	run("ipam", "gc", "-c", conf)
	apply := run("apply", "-c", conf)
	run("diff", "-c", conf)
	run("show", "-c", conf)
	outputs = append(outputs, h.exec("version"), h.exec("help"), h.exec("help", hostile), h.exec(hostile), h.exec("diff", "--"+hostile))
	if !strings.Contains(apply.stdout, "adoptme") {
		t.Errorf("apply did not take adoptme over:\n%s", apply)
	}

	// The daemon's log, text and JSON: a file path with escapes, the
	// kernel's names in the conflict it logs.
	for _, format := range []string{"text", "json"} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		c := exec.CommandContext(ctx, binary, "run", "-c", conf, "--log-format", format, "--netns", h.ns, "--state-dir", h.state)
		var out, errb bytes.Buffer
		c.Stdout, c.Stderr = &out, &errb
		_ = c.Run()
		cancel()
		if !strings.Contains(errb.String(), "starting") {
			t.Errorf("run --log-format %s logged no start:\n%s", format, errb.String())
		}
		outputs = append(outputs, result{stdout: out.String(), stderr: errb.String()})
	}

	// A transaction.json the service user forged, with its id and timer
	// made of the same bytes.
	forged := filepath.Join(h.dir, "forged")
	if err := os.Mkdir(forged, 0o700); err != nil {
		t.Fatal(err)
	}
	id := strings.ReplaceAll(hostile, "\xff", "") // JSON strings are UTF-8
	txn := `{"version": 1, "pending": {"id": ` + jsonString(id) + `, "state": "pending", "started": "2026-01-01T00:00:00Z",` +
		` "deadline": "2099-01-01T00:00:00Z", "window": "2m0s", "boot_id": "b", "restore": null, "applied": null,` +
		` "before": "", "plans": [], "timer": ` + jsonString("daemon:1"+id) + `}, "counts": {"confirmed": 0, "rolled_back": {}}}`
	if err := os.WriteFile(filepath.Join(forged, "transaction.json"), []byte(txn), 0o600); err != nil {
		t.Fatal(err)
	}
	forgedRun := func(args ...string) result {
		t.Helper()
		r := h.exec(append(args, "-c", conf, "--state-dir", forged)...)
		outputs = append(outputs, r)
		return r
	}
	st := forgedRun("status")
	forgedRun("apply")
	forgedRun("confirm")
	forgedRun("rollback")

	for _, r := range outputs {
		for _, s := range []string{r.stdout, r.stderr} {
			if i := rawAt(s); i >= 0 {
				t.Errorf("raw %q at %d of:\n%q", s[i:min(len(s), i+8)], i, s)
			}
			for _, line := range strings.Split(s, "\n") {
				if strings.HasPrefix(strings.TrimSpace(line), "+ link evil") {
					t.Errorf("a forged line: %q in\n%s", line, s)
				}
			}
		}
	}
	// The names were printed, escaped, not dropped.
	all := ""
	for _, r := range outputs {
		all += r.stdout + r.stderr
	}
	for _, want := range []string{`\x1b]0;pwned\a`, `MARK`, `\u202e`} {
		if !strings.Contains(all, want) {
			t.Errorf("%q appears nowhere: the hostile names did not reach the outputs", want)
		}
	}

	// The confirm command status prints reads back in the shell as the
	// same words, and runs nothing.
	var line string
	for _, l := range strings.Split(st.stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "Confirm: "); ok {
			line = rest
		}
	}
	if line == "" {
		// A build that refuses the forged file says so instead.
		if st.code != 1 {
			t.Fatalf("status shows no confirm command and no error:\n%s", st)
		}
		return
	}
	sh := exec.Command("bash", "-c", "printf '%s\\0' "+line)
	sh.Dir = h.dir
	out, err := sh.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	words := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if words[len(words)-1] != id || words[0] != "netreconcile" || words[1] != "confirm" {
		t.Errorf("the confirm line %s reads back as %q, want the id %q last", line, words, id)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "PWNED")); err == nil {
		t.Error("the shell ran what the forged id holds")
	}
}

func jsonString(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}
