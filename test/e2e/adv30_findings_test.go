package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// keyFile writes a WireGuard key (base64) to a 0600 file and returns its path.
func keyFile(t *testing.T, b64 string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "k")
	if err := os.WriteFile(p, []byte(b64+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tryApply applies cfg and reports the error instead of failing.
func (f *linkFiles) tryApply(cfg string) (string, string, error) {
	f.t.Helper()
	if err := os.WriteFile(f.file, []byte(cfg), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return f.ns.Exec("", netreconcileBin(f.t), "apply", "-c", f.file, "--state-dir", f.state)
}

// soft is converged without failing the test at the first miss: it logs.
func (f *linkFiles) soft(what string) bool {
	f.t.Helper()
	out, errOut, err := f.ns.Exec("", netreconcileBin(f.t), "diff", "-c", f.file, "--state-dir", f.state)
	ok := true
	if err != nil {
		f.t.Errorf("%s: diff after apply: %v\n%s%s", what, err, out, errOut)
		ok = false
	}
	out, errOut, err = f.ns.Exec("", netreconcileBin(f.t), "apply", "-c", f.file, "--state-dir", f.state)
	if err != nil || !strings.Contains(out, "No changes") {
		f.t.Errorf("%s: second apply: %v\n%s%s", what, err, out, errOut)
		ok = false
	}
	return ok
}

// showRoundTrip: show (or show --all) printed as a file validates, plans
// nothing and applies with zero writes.
func (f *linkFiles) showRoundTrip(what string, all bool) {
	f.t.Helper()
	args := []string{"show", "--state-dir", f.state}
	if all {
		args = append(args, "--all", "-c", f.file)
	}
	shown := runNetreconcile(f.t, f.ns, args...)
	rendered := filepath.Join(f.t.TempDir(), "shown.yaml")
	if err := os.WriteFile(rendered, []byte(shown), 0o644); err != nil {
		f.t.Fatal(err)
	}
	bin := netreconcileBin(f.t)
	if out, errOut, err := f.ns.Exec("", bin, "validate", "-c", rendered); err != nil {
		f.t.Errorf("%s: show's output does not validate: %v\n%s%s\n%s", what, err, out, errOut, shown)
		return
	}
	if out, errOut, err := f.ns.Exec("", bin, "diff", "-c", rendered, "--state-dir", f.state); err != nil {
		f.t.Errorf("%s: show's output plans something: %v\n%s%s\n%s", what, err, out, errOut, shown)
	}
	if out, errOut, err := f.ns.Exec("", bin, "apply", "-c", rendered, "--state-dir", f.state); err != nil || !strings.Contains(out, "No changes") {
		f.t.Errorf("%s: show's output applied: %v\n%s%s\n%s", what, err, out, errOut, shown)
	}
}

// Walk finding 154 (issue 30, guest probe): the kernel keeps one ipvlan
// mode and one flag per parent and sets both from every ipvlan it makes
// there. An ipvlan of the file on a parent that carries someone else's
// (made with ip, l2 private) left theirs l2 bridge, or l3 bridge when
// ours was l3. Now a new ipvlan takes the parent's flag, and one in
// another mode is a conflict that leaves theirs as it was.
func TestWalkFinding154IPVlanLeavesForeignPortAlone(t *testing.T) {
	requireModules(t, "ipvlan", "dummy")
	for _, mode := range []string{"l2", "l3"} {
		t.Run(mode, func(t *testing.T) {
			ns := newNetNS(t, "")
			ns.IP(t, "link", "add", "d0", "type", "dummy")
			ns.IP(t, "link", "add", "link", "d0", "name", "fi0", "type", "ipvlan", "mode", "l2", "private")
			f := newLinkFiles(t, ns)
			out, errOut, err := f.tryApply("version: 1\nlinks:\n  d0: {kind: device}\n  i0: {kind: ipvlan, ipvlan: {parent: d0, mode: " + mode + "}}\n")
			if mode == "l3" && (err == nil || !strings.Contains(errOut+out, "the kernel keeps one ipvlan mode per parent")) {
				t.Errorf("apply of an l3 ipvlan beside someone else's l2 one: %v, want a conflict\n%s%s", err, out, errOut)
			}
			if mode == "l2" {
				if err != nil {
					t.Fatalf("apply: %v\n%s%s", err, out, errOut)
				}
				f.converged()
			}
			mustContain(t, "someone else's ipvlan", ns.IP(t, "-d", "link", "show", "fi0"), "ipvlan  mode l2 private")
		})
	}
}
