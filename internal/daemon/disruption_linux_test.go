package daemon_test

import (
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// max-disruption: the daemon holds a change above it, with what needs it,
// says so in STATUS=, the metrics and one log line, applies the rest, and
// leaves the held change to an apply by hand; the command line flag
// overrides the file's key.
func TestHoldsChangesAboveMaxDisruption(t *testing.T) {
	t.Parallel()
	const file = `version: 1
settings: {max-disruption: in-place}
links:
  nrdb0: {kind: bridge, mtu: MTU}
  nrdvx: {kind: vxlan, master: nrdb0, vxlan: {id: VNI, remote: 192.0.2.2}, addresses: [10.77.0.1/24]}
routes:
  - {to: 10.78.0.0/16, via: 10.77.0.254, table: 100}
`
	// The edit adds a route through the vxlan: it waits with it.
	const more = "  - {to: 10.79.0.0/16, dev: nrdvx, table: 100}\n"
	conf := func(vni, mtu string) string { return strings.NewReplacer("VNI", vni, "MTU", mtu).Replace(file) }
	e := newEnv(t, conf("100", "1500"))
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	index := func() string { return strings.SplitN(nettest.IP(t, e.ns, "-o", "link", "show", "nrdvx"), ":", 2)[0] }
	before := index()

	// A new VNI recreates the vxlan (held, with its address and the
	// route through it); the bridge's MTU is in place (applied).
	from := p.count()
	writeInPlace(t, e.config, conf("101", "1400")+more)
	status := p.statusAfter(from, "changes held", editDeadline)
	for _, want := range []string{"not converged", "link nrdvx: link recreated", "above max-disruption in-place", "apply them with netreconcile apply"} {
		if !strings.Contains(status, want) {
			t.Errorf("STATUS= %q lacks %q", status, want)
		}
	}
	eventually(t, editDeadline, "the in-place change applied", func() bool {
		return strings.Contains(nettest.IP(t, e.ns, "-o", "link", "show", "nrdb0"), " mtu 1400 ")
	})
	p.settle()
	if got := index(); got != before {
		t.Fatalf("the held vxlan was recreated: ifindex %s -> %s", before, got)
	}
	if !strings.Contains(nettest.IP(t, e.ns, "-d", "link", "show", "nrdvx"), "vxlan id 100 ") {
		t.Fatal("the held vxlan changed")
	}
	log := p.Stderr()
	if n := strings.Count(log, "msg=\"change held:"); n != 1 {
		t.Errorf("%d log lines for the held change, want 1 (passes since: a line per change of what is held)\n%s", n, log)
	}
	for _, want := range []string{`kind=link id=nrdvx action=replace disruption=link_recreated max_disruption=in_place`, `what="route 10.79.0.0/16 table 100 is held: it needs link nrdvx, which is held"`} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
	resp, err := http.Get("http://" + p.metricsAddr()[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`netreconcile_held_changes{disruption="link_recreated"} 1`, `netreconcile_held_changes{disruption="link_flapped"} 0`, `netreconcile_reconciles_total{result="held"}`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %q", want)
		}
	}

	// An apply by hand applies it; the daemon is converged again.
	from = p.count()
	out, err := exec.Command(binary, "apply", "--netns", e.ns, "-c", e.config, "--state-dir", e.state).CombinedOutput()
	if err != nil {
		t.Fatalf("apply by hand: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "± link nrdvx") {
		t.Errorf("apply by hand:\n%s", out)
	}
	p.statusAfter(from, "converged:", editDeadline)
	if index() == before {
		t.Error("the apply by hand did not recreate the vxlan")
	}
}

// run --max-disruption overrides the file: link-recreated lets the daemon
// recreate.
func TestMaxDisruptionFlagOverridesTheFile(t *testing.T) {
	t.Parallel()
	const file = "version: 1\nsettings: {max-disruption: in-place}\nlinks:\n  nrdvy: {kind: vxlan, vxlan: {id: VNI, remote: 192.0.2.2}}\n"
	e := newEnv(t, strings.Replace(file, "VNI", "200", 1))
	p := e.start(t, nil, "--max-disruption", "link-recreated")
	p.waitMsg(0, "READY=1", startDeadline)
	from := p.count()
	writeInPlace(t, e.config, strings.Replace(file, "VNI", "201", 1))
	p.statusAfter(from, "converged:", editDeadline)
	eventually(t, editDeadline, "recreated", func() bool {
		out, _ := exec.Command("ip", "-n", e.ns, "-d", "link", "show", "nrdvy").Output()
		return strings.Contains(string(out), "vxlan id 201 ")
	})
}
