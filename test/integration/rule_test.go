package integration

import (
	"strings"
	"testing"
)

// A rule with "fwmark 0" (a real selector: mark 0 under mask 0xffffffff)
// converges: it read back as a rule without a mark, so applies alternated
// between "file exists" and deleting it. Rules whose selectors the kernel
// stores as "none" (/0 prefixes) converge the same way.
func TestRuleSelectorsRoundTrip(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", `version: 1
rules:
  - {priority: 16, fwmark: 0, table: 5, family: ipv4}
  - {priority: 17, fwmark: 0x40/0xff, table: 5, family: ipv6}
  - {priority: 18, from: 0.0.0.0/0, to: 10.0.0.0/8, table: 6}
  - {priority: 19, to: "::/0", table: 6}
  - {priority: 20, table: 7, suppress-prefixlength: 0, family: ipv4}
  - {priority: 21, table: 1000, suppress-prefixlength: 0, family: ipv4}
`)
	e.apply(f)
	rules := e.rules()
	for _, w := range []string{"16:\tfrom all fwmark 0 lookup 5 proto 245", "17:\tfrom all fwmark 0x40/0xff lookup 5 proto 245", "18:\tfrom all to 10.0.0.0/8 lookup 6 proto 245", "19:\tfrom all lookup 6 proto 245", "20:\tfrom all lookup 7 suppress_prefixlength 0 proto 245"} {
		if !strings.Contains(rules, w) {
			t.Errorf("missing %q:\n%s", w, rules)
		}
	}
	for i := 0; i < 2; i++ {
		if r := e.cli("diff", "-c", f); r.Code != 0 {
			t.Errorf("diff %d: exit %d\n%s%s", i+2, r.Code, r.Stdout, r.Stderr)
		}
		if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
			t.Errorf("apply %d: exit %d\n%s%s", i+2, r.Code, r.Stdout, r.Stderr)
		}
	}
	if rules := e.rules(); !strings.Contains(rules, "16:\tfrom all fwmark 0 lookup 5 proto 245") {
		t.Errorf("fwmark 0 rule lost:\n%s", rules)
	}
}

// Deleting a rule never deletes another: the kernel takes a delete's unset
// selectors as wildcards and deletes the first match in its list, so
// dropping "16: from all lookup 5" would delete "16: from all fwmark 0
// lookup 5" (listed first) and leave the stale rule.
// Walk finding 15 (host seed 1234, step 77).
func TestRuleDeleteTakesOnlyItsRule(t *testing.T) {
	e := newEnv(t)
	before := e.file("a.yaml", `version: 1
rules:
  - {priority: 16, fwmark: 0, table: 5, family: ipv4}
  - {priority: 16, table: 5, family: ipv4}
  - {priority: 17, iif: lo, table: 5, family: ipv4}
  - {priority: 17, table: 5, family: ipv4}
`)
	e.apply(before)
	after := e.file("b.yaml", `version: 1
rules:
  - {priority: 16, fwmark: 0, table: 5, family: ipv4}
  - {priority: 17, iif: lo, table: 5, family: ipv4}
`)
	e.apply(after)
	got := e.ip("-4", "rule", "show")
	want := []string{"16:\tfrom all fwmark 0 lookup 5 proto 245", "17:\tfrom all iif lo lookup 5 proto 245"}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("kept rule %q deleted:\n%s", w, got)
		}
	}
	for _, stale := range []string{"16:\tfrom all lookup 5", "17:\tfrom all lookup 5"} {
		if strings.Contains(got, stale) {
			t.Errorf("stale rule %q kept:\n%s", stale, got)
		}
	}
	if r := e.cli("diff", "-c", after); r.Code != 0 {
		t.Errorf("second diff: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := e.cli("apply", "-c", after); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
		t.Errorf("second apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}

// "not from X" and "from X" of one priority are one rule to the kernel (its
// existence check compares no flags): the file is refused before anything
// is written, instead of failing with "file exists" on every pass.
// Walk finding 15 (host seed 1234, step 77).
func TestRulesDifferingOnlyInNotRefused(t *testing.T) {
	e := newEnv(t)
	f := e.file("a.yaml", "version: 1\nrules:\n  - {priority: 18, from: 10.1.0.0/16, table: 5}\n  - {priority: 18, not: true, from: 10.1.0.0/16, table: 5}\n")
	if r := e.cli("apply", "-c", f); r.Code == 0 || !strings.Contains(r.Stderr, "only in not; the kernel takes them for the same rule") {
		t.Errorf("apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := e.ip("-4", "rule", "show"); strings.Contains(got, "lookup 5") {
		t.Errorf("a refused file wrote rules:\n%s", got)
	}
}
