package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/netreconcile/netreconcile/internal/ipam"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// ipamFile is a dual-stack pool of 2-address blocks, so a few allocations take several blocks,
// and a bridge taking its address from it.
const ipamFile = `version: 1
pools:
  pods:
    subnets:
      - {ipv4: 10.2.0.0/28, ipv6: "fd01:203:405:607::/124"}
    block-size-bits: 1
    export-table: 119
    reuse-delay: 0s
links:
  lo: {kind: device, state: up}
  kube0:
    kind: bridge
    addresses:
      - pool: pods
        ipv6-prefix-length: 64
`

// table119 lists both families of table 119, every protocol.
func (e *env) table119() string {
	return e.ip("-4", "route", "show", "table", "119") + e.ip("-6", "route", "show", "table", "119")
}

func (e *env) ipam(args ...string) string {
	e.t.Helper()
	r := e.cli(append([]string{"ipam"}, args...)...)
	if r.Code != 0 {
		e.t.Fatalf("ipam %s: exit %d\n%s%s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}

func (e *env) noChanges(file string) {
	e.t.Helper()
	if out := e.apply(file); out != "No changes: the kernel matches the configuration.\n" {
		e.t.Errorf("second apply:\n%s", out)
	}
}

func TestIPAMExportRoutes(t *testing.T) {
	e := newEnv(t)
	f := e.file("ipam.yaml", ipamFile)
	// A foreign route in the export table, as BIRD or an operator might add.
	e.ip("link", "set", "lo", "up")
	e.ip("route", "add", "192.0.2.0/24", "dev", "lo", "table", "119")

	if r := e.cli("diff", "-c", f); r.Code != 2 || !strings.Contains(r.Stdout, "+ address (from pool pods) dev kube0: allocated by apply") {
		t.Fatalf("diff before apply: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	e.apply(f)
	check(t, "addresses", e.addrs(), `
lo 127.0.0.1/8 ::1/128
kube0 10.2.0.0/32 fd01:203:405:607::/64
`)
	check(t, "table 119", e.table119(), `
10.2.0.0/31 dev lo proto 245 
192.0.2.0/24 dev lo scope link 
fd01:203:405:607::/127 dev lo proto 245 metric 1024 pref medium
`)
	e.noChanges(f)

	// Two more owners fill block 0 and take block 1.
	a := e.ipam("allocate", "-c", f, "--owner", "pid:1001")
	b := e.ipam("allocate", "-c", f, "--owner", "pid:1002")
	check(t, "allocated", a+b, `
10.2.0.1
fd01:203:405:607::1
10.2.0.2
fd01:203:405:607::2
`)
	e.apply(f)
	check(t, "table 119 with block 1", e.table119(), `
10.2.0.0/31 dev lo proto 245 
10.2.0.2/31 dev lo proto 245 
192.0.2.0/24 dev lo scope link 
fd01:203:405:607::/127 dev lo proto 245 metric 1024 pref medium
fd01:203:405:607::2/127 dev lo proto 245 metric 1024 pref medium
`)
	e.noChanges(f)

	// Block 1 emptied: given back, and its routes withdrawn.
	e.ipam("release", "-c", f, "--owner", "pid:1002")
	e.apply(f)
	check(t, "table 119 after release", e.table119(), `
10.2.0.0/31 dev lo proto 245 
192.0.2.0/24 dev lo scope link 
fd01:203:405:607::/127 dev lo proto 245 metric 1024 pref medium
`)
	e.noChanges(f)

	// The link leaves the file: its address goes back to the pool; block 0 stays for pid:1001.
	e.ipam("release", "-c", f, "--owner", "pid:1001")
	g := e.file("nolink.yaml", strings.Split(ipamFile, "  kube0:")[0])
	out := e.apply(g)
	if !strings.Contains(out, "Pool pods: 10.2.0.0 fd01:203:405:607:: of link kube0 given back.") {
		t.Errorf("apply without the link:\n%s", out)
	}
	check(t, "table 119 with no block", e.table119(), `
192.0.2.0/24 dev lo scope link 
`)
	e.noChanges(g)

	show := e.cli("show", "-c", g)
	if !strings.Contains(show.Stdout, "pools:\n    # 0 addresses allocated, 0 waiting out the reuse delay; 0 of 8 allowed blocks held\n    pods:\n") {
		t.Errorf("show:\n%s%s", show.Stdout, show.Stderr)
	}
}

func TestIPAMLinkAddressStable(t *testing.T) {
	e := newEnv(t)
	// Another owner first, so the link's address is not simply the first of the pool.
	f := e.file("ipam.yaml", ipamFile)
	e.ipam("allocate", "-c", f, "--owner", "pid:1")
	e.apply(f)
	want := `
lo 127.0.0.1/8 ::1/128
kube0 10.2.0.1/32 fd01:203:405:607::1/64
`
	check(t, "addresses", e.addrs(), want)
	e.noChanges(f)

	// A restart: a new process with a new Registry over the same state directory, after the
	// link was lost.
	e.ip("link", "del", "kube0")
	bin := nettest.BuildT(t)
	out, err := exec.Command(bin, "apply", "-c", f, "--netns", e.ns, "--state-dir", e.state).CombinedOutput()
	if err != nil {
		t.Fatalf("apply in a new process: %v\n%s", err, out)
	}
	check(t, "addresses after a restart", e.addrs(), want)
	e.noChanges(f)

	// A device link keeps its address from the pool as long as the file says so, and loses only
	// that address when the file stops: the registry says it was ours.
	e.ip("link", "add", "eth9", "type", "veth", "peer", "name", "eth9p")
	e.ip("addr", "add", "192.0.2.9/24", "dev", "eth9")
	dev := e.file("dev.yaml", ipamFile+"  eth9:\n    kind: device\n    addresses: [{pool: pods}]\n")
	e.apply(dev)
	if got := e.ip("-br", "-4", "addr", "show", "eth9"); !strings.Contains(got, "192.0.2.9/24 10.2.0.2/32") {
		t.Errorf("eth9 with its pool address: %s", got)
	}
	e.noChanges(dev)
	nodev := e.file("nodev.yaml", ipamFile+"  eth9:\n    kind: device\n")
	e.apply(nodev)
	if got := e.ip("-br", "-4", "addr", "show", "eth9"); !strings.Contains(got, "192.0.2.9/24") || strings.Contains(got, "10.2.0.2") {
		t.Errorf("eth9 after its pool entry left: %q", got)
	}
	e.noChanges(nodev)
}

func TestIPAMValidationErrors(t *testing.T) {
	e := newEnv(t)
	f := e.file("bad.yaml", "version: 1\npools:\n  pods:\n    subnets: [10.2.0.0/16, \"fd01::/112\"]\n    export-table: 254\nlinks:\n  kube0:\n    kind: bridge\n    addresses: [{pool: pod}]\n")
	r := e.cli("apply", "-c", f)
	want := "netreconcile apply: invalid configuration (3 errors):\n" +
		"  " + f + ":4:28: pools.pods.subnets[1]: subnet fd01::/112 has other families than the first, 10.2.0.0/16; a dual-stack pair is written {ipv4: P4, ipv6: P6}\n" +
		"  " + f + ":5:19: pools.pods.export-table: table main is the kernel's own; expected 1-251 or above 255 (default 119)\n" +
		"  " + f + ":9:24: links.kube0.addresses[0].pool: pool \"pod\" is not declared under pools\n"
	if r.Code != 1 || r.Stderr != want {
		t.Errorf("exit %d\n%s\nwant:\n%s", r.Code, r.Stderr, want)
	}
	if links := e.ip("-o", "link"); strings.Contains(links, "kube0") {
		t.Errorf("a link was created despite the errors:\n%s", links)
	}
}

// TestIPAMShrinkRefused: a pool changed under held blocks is refused before any kernel write.
func TestIPAMShrinkRefused(t *testing.T) {
	e := newEnv(t)
	f := e.file("ipam.yaml", ipamFile)
	e.apply(f)
	before := e.table119()
	shrunk := e.file("shrunk.yaml", strings.Replace(strings.Replace(ipamFile, "block-size-bits: 1", "block-size-bits: 2", 1), "  kube0:", "  br9: {kind: bridge}\n  kube0:", 1))
	r := e.cli("apply", "-c", shrunk)
	if r.Code != 1 || !strings.Contains(r.Stderr, "blockSizeBits cannot change from 1 to 2 while blocks are held") {
		t.Errorf("apply with a new block size: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if links := e.ip("-o", "link"); strings.Contains(links, "br9") {
		t.Errorf("a link was created despite the refusal:\n%s", links)
	}
	check(t, "table 119", e.table119(), before)
	// Appending a subnet is fine.
	grown := e.file("grown.yaml", strings.Replace(ipamFile, "\"fd01:203:405:607::/124\"}\n", "\"fd01:203:405:607::/124\"}\n      - {ipv4: 10.3.0.0/28, ipv6: \"fd01:203:405:608::/124\"}\n", 1))
	e.noChanges(grown)
}

// TestIPAMConcurrentAllocate runs `netreconcile ipam allocate` in several processes while apply
// runs again and again: every owner gets its own address, the registry stays whole, and the
// next apply exports exactly the blocks held.
func TestIPAMConcurrentAllocate(t *testing.T) {
	e := newEnv(t)
	f := e.file("ipam.yaml", strings.Replace(ipamFile, "10.2.0.0/28, ipv6: \"fd01:203:405:607::/124\"", "10.2.0.0/24, ipv6: \"fd01:203:405:607::/120\"", 1))
	bin := nettest.BuildT(t)
	const procs, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, procs*each+10)
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				out, err := exec.Command(bin, "ipam", "allocate", "-c", f, "--state-dir", e.state, "--netns", e.ns,
					"--owner", fmt.Sprintf("pid:%d", 100000+p*each+i)).CombinedOutput()
				if err != nil {
					errs <- fmt.Errorf("allocate: %v: %s", err, out)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	applies := 0
	for running := true; running; applies++ {
		select {
		case <-done:
			running = false
		default:
		}
		if r := e.cli("apply", "-c", f); r.Code != 0 {
			errs <- fmt.Errorf("apply: exit %d: %s%s", r.Code, r.Stdout, r.Stderr)
		}
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d applies ran during the allocations", applies)

	var listing struct {
		Pools []struct {
			Blocks      []ipam.Block      `json:"blocks"`
			Allocations []ipam.Allocation `json:"allocations"`
		} `json:"pools"`
	}
	if err := json.Unmarshal([]byte(e.ipam("list", "-c", f, "--output", "json")), &listing); err != nil {
		t.Fatal(err)
	}
	allocs := listing.Pools[0].Allocations
	if len(allocs) != procs*each+1 {
		t.Errorf("%d allocations, want %d", len(allocs), procs*each+1)
	}
	seen := map[string]string{}
	for _, a := range allocs {
		if o, dup := seen[a.IPv4.String()]; dup {
			t.Errorf("%s handed to %s and %s", a.IPv4, o, a.Owner)
		}
		seen[a.IPv4.String()] = a.Owner
	}
	e.apply(f)
	var want []string
	for _, b := range listing.Pools[0].Blocks {
		want = append(want, b.IPv4.String()+" dev lo proto 245 ")
	}
	got := strings.Split(strings.TrimSpace(e.ip("-4", "route", "show", "table", "119")), "\n")
	if strings.Join(got, "\n") != strings.TrimSpace(strings.Join(want, "\n")) {
		t.Errorf("table 119:\n%s\nwant the held blocks:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) != (procs*each+1+1)/2 {
		t.Errorf("%d blocks held for %d addresses of 2-address blocks", len(want), procs*each+1)
	}
	e.noChanges(f)
	_ = os.Remove(bin)
}
