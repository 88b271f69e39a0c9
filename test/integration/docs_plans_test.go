package integration

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/cli"
)

// TestDocsPlans runs the examples of docs/plans.md as the page shows them:
// the two files, the plan with every disruption class saved with diff
// --out, apply --max-disruption refusing it, and the saved plan refused
// once the kernel and the file changed; each output compared with the
// page's (the page names the file /etc/netreconcile/netreconcile.yaml and
// the plan change.plan).
func TestDocsPlans(t *testing.T) {
	doc, err := os.ReadFile("../../docs/plans.md")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```yaml\n(# (\\S+\\.yaml)\n.*?)```").FindAllStringSubmatch(string(doc), -1) {
		files[m[2]] = m[1]
	}
	consoles := map[string]string{} // the first command -> the block
	for _, m := range regexp.MustCompile("(?s)```console\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		consoles[strings.SplitN(m[1], "\n", 2)[0]] = m[1]
	}
	if files["before.yaml"] == "" || files["netreconcile.yaml"] == "" {
		t.Fatalf("docs/plans.md lacks before.yaml or netreconcile.yaml: %v", files)
	}
	e := newEnv(t)
	e.apply(e.file("before.yaml", files["before.yaml"]))
	f := e.file("netreconcile.yaml", files["netreconcile.yaml"])
	plan := filepath.Join(e.dir, "change.plan")
	norm := strings.NewReplacer(f, "/etc/netreconcile/netreconcile.yaml", plan, "change.plan")
	// output of the block whose first line is cmd: what follows it, up to
	// the next command.
	output := func(cmd string) string {
		b, ok := consoles[cmd]
		if !ok {
			t.Fatalf("docs/plans.md has no console block starting with %q", cmd)
		}
		rest := strings.SplitN(b, "\n", 2)[1]
		return rest
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s: docs/plans.md shows:\n%s\nnetreconcile printed:\n%s", what, want, got)
		}
	}

	r := e.cli("diff", "-c", f, "--out", plan)
	if r.Code != cli.ExitChanges {
		t.Fatalf("diff --out: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	check("diff --out", norm.Replace(r.Stdout), output("$ netreconcile diff --out change.plan"))
	for _, class := range []string{"[link recreated]", "[link flapped]", "[table replaced]", "in place"} {
		if !strings.Contains(r.Stdout, class) {
			t.Errorf("the example's plan has no op %s", class)
		}
	}

	r = e.cli("apply", "-c", f, "--max-disruption", "link-flapped")
	if r.Code != cli.ExitDisruption {
		t.Fatalf("apply --max-disruption: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	check("apply --max-disruption", r.Stderr, output("$ netreconcile apply --max-disruption link-flapped"))

	// The stale plan: the page's two commands, then apply --plan.
	b := consoles["$ ip link set br0 mtu 1480              # someone changes the kernel"]
	if b == "" {
		t.Fatal("docs/plans.md has no stale-plan block")
	}
	e.ip("link", "set", "br0", "mtu", "1480")
	e.file("netreconcile.yaml", strings.Replace(files["netreconcile.yaml"], "mtu: 1450", "mtu: 1400", 1))
	r = e.cli("apply", "-c", f, "--plan", plan)
	if r.Code != cli.ExitStale {
		t.Fatalf("apply --plan: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	want := b[strings.Index(b, "netreconcile apply: "):]
	check("apply --plan (stale)", norm.Replace(r.Stderr), want)

	// Undone, the saved plan applies as shown.
	e.ip("link", "set", "br0", "mtu", "1500")
	e.file("netreconcile.yaml", files["netreconcile.yaml"])
	if r := e.cli("apply", "-c", f, "--plan", plan); r.Code != 0 {
		t.Fatalf("apply --plan: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
}
