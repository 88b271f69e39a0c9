package daemon_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/internal/metrics"
	"github.com/netreconcile/netreconcile/test/flood"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// openFDs counts the descriptors a process holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// procStatus reads a field of /proc/PID/status, in kB for the memory ones.
func procStatus(t *testing.T, pid int, field string) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// Issue 29 (and finding 10 of issue 12): a local user holding 1,000 idle
// connections to the metrics port and 200 slowloris ones, each dialled
// again when the daemon closes it, blinds neither the scrapes nor the
// reconcile loop. The daemon's RLIMIT_NOFILE is lowered to what it holds
// plus the metrics server's whole budget (2*MaxConns+1) and a margin of
// 20: without the cap the flood takes every descriptor and kernel reads
// fail (EMFILE); with a plain cap, scrapes are refused. Two scrapers, one
// with a new connection per scrape and one that keeps it as Prometheus
// does, scrape every 100 ms for 12 s; a route deleted meanwhile is
// repaired.
func TestConnectionFloodBlindsNeitherScrapesNorRepair(t *testing.T) {
	e := newEnv(t, config("10.87.0.0/16"))
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	url := "http://" + addr[1] + "/metrics"
	pid := p.cmd.Process.Pid
	limit := uint64(openFDs(t, pid) + 2*metrics.MaxConns + 1 + 20)
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: limit, Max: limit}, nil); err != nil {
		t.Fatalf("prlimit: %v", err)
	}
	rssBefore := procStatus(t, pid, "VmRSS")

	f := flood.Start(addr[1], 1000, 200)
	defer f.Stop()
	time.Sleep(2 * time.Second)
	var (
		lat      []time.Duration
		failures []string
		maxFDs   int
		maxRSS   float64
		maxHeld  float64
	)
	heldRE := regexp.MustCompile(`(?m)^netreconcile_metrics_connections (\S+)$`)
	fresh := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	kept := &http.Client{Timeout: 10 * time.Second}
	held := f.Held()
	deleted := false
	for end := time.Now().Add(12 * time.Second); time.Now().Before(end); {
		for _, c := range []*http.Client{fresh, kept} {
			start := time.Now()
			resp, err := c.Get(url)
			if err == nil {
				var b []byte
				b, err = io.ReadAll(resp.Body)
				resp.Body.Close()
				if m := heldRE.FindSubmatch(b); m != nil {
					v, _ := strconv.ParseFloat(string(m[1]), 64)
					maxHeld = max(maxHeld, v)
				}
				if err == nil && resp.StatusCode != http.StatusOK {
					err = fmt.Errorf("status %s", resp.Status)
				}
			}
			if err != nil {
				failures = append(failures, err.Error())
				continue
			}
			lat = append(lat, time.Since(start))
		}
		maxFDs = max(maxFDs, openFDs(t, pid))
		maxRSS = max(maxRSS, procStatus(t, pid, "VmRSS"))
		if !deleted && time.Until(end) < 8*time.Second {
			nettest.IP(t, e.ns, "route", "del", "10.87.0.0/16", "table", "100")
			deleted = true
		}
		time.Sleep(100 * time.Millisecond)
	}
	repaired := hasRoute(t, e.ns, "10.87.0.0/16")
	dials := f.Stop()
	slices.Sort(lat)
	pct := func(q float64) time.Duration {
		if len(lat) == 0 {
			return 0
		}
		return lat[min(len(lat)-1, int(q*float64(len(lat))))]
	}
	t.Logf("1,000 idle + 200 slowloris connections (%d held on the client's side as the scrapes began, %d dialled in all): %d scrapes answered, %d failed; latency p50 %v, p99 %v, max %v; the metrics server held at most %.0f connections, the daemon at most %d descriptors (limit %d); resident %.1f MB before, at most %.1f MB during",
		held, dials, len(lat), len(failures), pct(0.5), pct(0.99), pct(1), maxHeld, maxFDs, limit, rssBefore/1024, maxRSS/1024)
	if len(failures) > 0 {
		t.Errorf("%d scrapes failed, the first: %s", len(failures), failures[0])
	}
	if len(lat) < 50 {
		t.Errorf("only %d scrapes answered in 12 s", len(lat))
	}
	if !repaired {
		t.Errorf("the route deleted during the flood was not repaired:\n%s", p.Stderr())
	}
	if uint64(maxFDs) >= limit {
		t.Errorf("daemon held %d descriptors, its limit is %d", maxFDs, limit)
	}
	if strings.Contains(p.Stderr(), "too many open files") {
		t.Errorf("the daemon ran out of descriptors:\n%s", p.Stderr())
	}
}

// The WireGuard peer gauge comes from the pass's own judgment of the peers
// (no second dump of the links) and is fresh when that pass ends: a peer the
// pass created is counted at once, judged with the endpoint it was given
// (unknown: no handshake yet, within the connect timeout).
func TestWireGuardPeerMetrics(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "wireguard-go")
	dev := wgDevName('m')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, _ := wgKeyFile(t, e.dir, "wg.key")
	link := wgLink(dev, keyFile)
	writeInPlace(t, e.config, "version: 1\nlinks:\n"+link)
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	scrape := func() string {
		t.Helper()
		resp, err := http.Get("http://" + addr[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	gauge := regexp.MustCompile(`(?m)^netreconcile_wireguard_peers\{.*$`)
	want := fmt.Sprintf(`netreconcile_wireguard_peers{link=%q,state="unknown"} 1`, dev)
	if got := gauge.FindAllString(scrape(), -1); len(got) != 1 || got[0] != want {
		t.Fatalf("after READY=1: %q, want [%s]", got, want)
	}

	// A second peer: counted when the pass that creates it ends.
	peer, _ := wgtypes.GeneratePrivateKey()
	from := p.count()
	writeByRename(t, e.config, "version: 1\nlinks:\n"+link+fmt.Sprintf(`        - public-key: %s
          allowed-ips: [10.98.0.3/32]
          endpoints: ["192.0.2.2:51820"]
`, peer.PublicKey()))
	p.statusAfter(from, "converged: 3 objects", editDeadline) // the link and its two peers
	want = fmt.Sprintf(`netreconcile_wireguard_peers{link=%q,state="unknown"} 2`, dev)
	if got := gauge.FindAllString(scrape(), -1); len(got) != 1 || got[0] != want {
		t.Errorf("after the pass that added a peer: %q, want [%s]", got, want)
	}
}

// A real scrape of a daemon that uses every part (links, routes, rules, an
// IPAM pool, nftables, a WireGuard link, a pending safe-apply transaction)
// passes `promtool check metrics`, Prometheus' own lint of names, types,
// units and help (issue 32), and its families are exactly those
// docs/daemon.md documents: a metric added, renamed or dropped without the
// documentation fails here. Label values are snake_case.
func TestScrapePassesPromtoolAndIsDocumented(t *testing.T) {
	nettest.RequireTool(t, "promtool")
	nettest.RequireTool(t, "wireguard-go")
	dev := wgDevName('p')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, _ := wgKeyFile(t, e.dir, "wg.key")
	content := `version: 1
pools:
  nodes:
    subnets: [10.84.0.0/16]
links:
  lo: {kind: device, state: up}
  nrdm0:
    kind: bridge
    addresses: [{pool: nodes}]
` + wgLink(dev, keyFile) + `rules:
  - {priority: 1000, from: 10.72.0.0/24, table: 100}
nftables:
  inet nrd_metrics:
    chains:
      out:
        type: filter
        hook: output
        priority: filter
        rules:
          - ip daddr 10.72.0.0/16 accept
routes:
  - {to: 10.72.0.0/16, dev: nrdm0, table: 100}
`
	writeInPlace(t, e.config, content)
	p := e.start(t, nil, "--metrics-listen", "127.0.0.1:0")
	p.waitMsg(0, "READY=1", startDeadline)
	addr := p.metricsAddr()
	if addr == nil {
		t.Fatalf("no metrics address logged:\n%s", p.Stderr())
	}
	// A pending transaction, whose deadline the daemon keeps: the
	// candidate adds a route.
	candidate := filepath.Join(e.dir, "candidate.yaml")
	writeInPlace(t, candidate, content+"  - {to: 10.73.0.0/16, dev: nrdm0, table: 100}\n")
	apply := exec.Command(binary, "apply", "--netns", e.ns, "-c", e.config, "--state-dir", e.state,
		"--candidate", candidate, "--confirm-within", "10m")
	apply.Env = cleanEnv()
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("apply --confirm-within: %v\n%s", err, out)
	}
	var page string
	eventually(t, editDeadline, "every family in the scrape", func() bool {
		resp, err := http.Get("http://" + addr[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page = string(b)
		return strings.Contains(page, "netreconcile_safeapply_deadline_timestamp_seconds ") &&
			strings.Contains(page, "netreconcile_wireguard_peers{") &&
			strings.Contains(page, "netreconcile_ipam_pool_blocks{")
	})

	check := exec.Command("promtool", "check", "metrics")
	check.Stdin = strings.NewReader(page)
	out, err := check.CombinedOutput()
	t.Logf("promtool check metrics on a scrape of %d lines: %v\n%s", strings.Count(page, "\n"), err, out)
	if err != nil || len(bytes.TrimSpace(out)) != 0 {
		t.Errorf("promtool check metrics: %v\n%s\npage:\n%s", err, out, page)
	}

	for _, want := range []string{`kind="nft_chain"`, `kind="route"`, `netreconcile_build_info{goversion="go`} {
		if !strings.Contains(page, want) {
			t.Errorf("the scrape lacks %s", want)
		}
	}
	// Label values as Prometheus writes them: no blanks, no capitals.
	for _, m := range regexp.MustCompile(`(kind|result|stage|source|state|cause|reason)="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		if !regexp.MustCompile(`^[a-z0-9_]+$`).MatchString(m[2]) {
			t.Errorf("label %s value %q is not snake_case", m[1], m[2])
		}
	}

	scraped := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (\S+) `).FindAllStringSubmatch(page, -1) {
		scraped[m[1]] = true
	}
	doc, err := os.ReadFile("../../docs/daemon.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`((?:netreconcile|go|process|promhttp)_[a-z0-9_]+)").FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	for name := range scraped {
		if !documented[name] {
			t.Errorf("%s is served but not documented in docs/daemon.md", name)
		}
	}
	for name := range documented {
		if strings.HasPrefix(name, "netreconcile_") && !scraped[name] && !renamed[name] {
			t.Errorf("docs/daemon.md documents %s, which is not served", name)
		}
	}
}

// renamed are the names of before 1.0 that docs/daemon.md lists as
// renamed: documented, no longer served.
var renamed = map[string]bool{
	"netreconcile_ipam_pool":              true,
	"netreconcile_safeapply_seconds_left": true,
}
