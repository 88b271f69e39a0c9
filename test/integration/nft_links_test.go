package integration

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// nftLinks declares links and tables whose rules name them in every way
// nft resolves a link's name to its index when it compiles (iif, meta oif,
// fib's oif, a concatenation, a verdict map, an iface_index set), and a
// table that names none, which no link holds back.
const nftLinks = `version: 1
links:
  nrc165a: {kind: bridge}
  nrc165b: {kind: bridge}
nftables:
  inet t165:
    sets:
      ifs: {type: iface_index, elements: ['"nrc165b"']}
    chains:
      in:
        type: filter
        hook: input
        priority: 0
        rules:
          - 'iif "nrc165a" accept'
          - 'meta iif . ip saddr { "nrc165a" . 10.0.0.1 } accept'
          - 'iif vmap { "nrc165b" : accept }'
          - 'iif @ifs counter accept'
          - 'fib daddr oif "nrc165a" accept'
          - 'iifname "nrc165a" counter'
      out:
        type: filter
        hook: output
        priority: 0
        rules:
          - 'meta oif "nrc165b" accept'
  inet plain165:
    chains:
      in: {type: filter, hook: input, priority: 0, rules: ['tcp dport 22 accept']}
`

// nftLinksListed checks that the namespace holds both tables, with every
// rule naming its link by name: a rule that holds the index of a link
// since deleted lists as a number.
func nftLinksListed(t *testing.T, ns string) {
	t.Helper()
	got := nettest.InNS(t, ns, "nft", "list", "ruleset")
	for _, want := range []string{`iif "nrc165a" accept`, `iif . ip saddr { "nrc165a" . 10.0.0.1 } accept`, `iif vmap { "nrc165b" : accept }`,
		`elements = { "nrc165b" }`, `oif "nrc165b" accept`, `fib daddr oif "nrc165a" accept`, "table inet plain165", "tcp dport 22 accept"} {
		if !strings.Contains(got, want) {
			t.Errorf("the ruleset lacks %q:\n%s", want, got)
		}
	}
}

// Rules that name a declared link the namespace does not have yet: nft
// refused them ("Interface does not exist"), and with them the whole file,
// in validate, diff and apply, so the file never converged on a fresh
// namespace but in two stages; once applied, a deleted link was never made
// again (walk finding 165: adversarial review, `iif "x13" accept` with the
// bridge x13 declared beside it). One apply converges now, diff says the
// table waits for the link, validate takes the file, and a name neither
// declared nor there is still nft's error.
func TestWalkFinding165RulesNameALinkTheApplyMakes(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("f.yaml", nftLinks)
	if r := e.cli("validate", "-c", f); r.Code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	bad := e.file("bad.yaml", strings.Replace(nftLinks, `'iifname "nrc165a" counter'`, `'oif "nrc165none" accept'`, 1))
	for _, cmd := range []string{"validate", "diff"} {
		if r := e.cli(cmd, "-c", bad); r.Code != 1 || !strings.Contains(r.Stderr, "rules[5]: Interface does not exist") || strings.Count(r.Stderr, "Interface does not exist") != 1 {
			t.Errorf("%s of a rule naming a link neither declared nor there: exit %d\n%s%s", cmd, r.Code, r.Stdout, r.Stderr)
		}
	}
	r := e.cli("diff", "-c", f)
	if r.Code != 2 || !strings.Contains(r.Stdout, "+ nft table inet t165: waits for link nrc165") || !strings.Contains(r.Stdout, "+ nft table inet plain165\n") {
		t.Fatalf("diff on a fresh namespace: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.apply(f)
	nftLinksListed(t, e.ns)
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Fatalf("diff after one apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// Deleted behind its back: diff says the table waits, one apply
	// makes the links again and compiles the rules for their new indexes.
	e.ip("link", "del", "nrc165a")
	e.ip("link", "del", "nrc165b")
	r = e.cli("diff", "-c", f)
	if r.Code != 2 || !strings.Contains(r.Stdout, "~ nft table inet t165: waits for link nrc165") {
		t.Fatalf("diff after the links were deleted: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.apply(f)
	nftLinksListed(t, e.ns)
	if r := e.cli("diff", "-c", f); r.Code != 0 {
		t.Fatalf("diff after the repair: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// The daemon repairs a declared link deleted behind its back and the rules
// that name it, in its next pass (walk finding 165: it failed every pass
// with nft's "Interface does not exist" and never made the link again).
func TestWalkFinding165DaemonRepairsALinkRulesName(t *testing.T) {
	nettest.RequireTool(t, "nft")
	e := newEnv(t)
	f := e.file("f.yaml", nftLinks)
	bin := nettest.BuildT(t)
	cmd := exec.Command(bin, "run", "-c", f, "--netns", e.ns, "--state-dir", e.state, "--log-level", "error")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	converged := func(what string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			r := e.cli("diff", "-c", f)
			if r.Code == 0 {
				nftLinksListed(t, e.ns)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the daemon did not converge %s: diff exit %d\n%s%s", what, r.Code, r.Stdout, r.Stderr)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	converged("from a fresh namespace")
	e.ip("link", "del", "nrc165a")
	converged("after a link was deleted")
	// The other is named by a set's element: a daemon that remembered the
	// set as compiled for the old index would keep it.
	e.ip("link", "del", "nrc165b")
	converged("after the set's link was deleted")
}
