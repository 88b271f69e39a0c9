// Package wgbench is the WireGuard benchmark: netreconcile against wg(8) on
// twin devices, each in a namespace of its own, at several numbers of
// peers, printed as growth tables (test/bench/growth). make bench-wg runs it
// here on wireguard-go devices (internal/engine's TestBenchWireGuard); make
// bench-wg-vm in the qemu guest on the kernel module (test/e2e's
// TestBenchWireGuardKernel), which is what production uses.
//
// Measured at each size, each the median of Rounds rounds with the tools
// taking turns (both devices emptied again between rounds, not timed):
//
//   - configure: netreconcile's load, read, diff and apply of N peers on an
//     empty device, against `wg setconf` of the same configuration; and
//     its two parts against the same: the load of the file (YAML parsed
//     and validated) and the pass that follows (what the daemon does with
//     a file it holds);
//   - change one peer (one more allowed IP) and no change: the same pass
//     on the configured device, against `wg syncconf` (what a user of wg
//     runs to apply an edited file: it reads the device and sends the
//     difference);
//   - the daemon's pass with no change: read, diff and apply with the file
//     already loaded, as the daemon holds it between edits; and the same
//     woken by a route, which takes the devices from the last read;
//   - read: one read of the device (what every pass costs), against
//     `wg show DEV dump`;
//   - the configure's CPU time, each tool's with its device's: ours is
//     the test process's (netreconcile runs in it) and wg's its
//     process's, user and system (the kernel module does its work in the
//     writer's system calls), each plus its wireguard-go daemon's. Wall
//     times on a loaded machine wander with the scheduler; CPU times do
//     not, so this ratio is the one to trust when the load is high.
//
// The notes give the WireGuard messages netreconcile sent (netlink messages
// on the kernel module, control socket requests on wireguard-go) and the
// daemon's pass's heap allocations per peer. Both devices stay down: an up
// device with endpoints and keepalives starts a handshake with every new
// peer, background work for both tools that the measure is not about. wg
// runs in the namespace from a locked thread, without ip-netns-exec's
// mount namespace.
package wgbench

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/internal/actual"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/test/bench/growth"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// Options say where and how long to measure.
type Options struct {
	// Kernel uses the kernel module's devices; otherwise wireguard-go's.
	Kernel bool
	// Sizes are the numbers of peers, smallest first.
	Sizes []int
	// Rounds per measure (the median is printed).
	Rounds int
	// Out receives the tables.
	Out io.Writer
	// CPUProfile, when set, receives a CPU profile of the no-change passes
	// (netreconcile's, the file loaded each time) at the largest size.
	CPUProfile string
}

// messageCounter is the kernel's count of WireGuard messages sent.
type messageCounter interface{ WireGuardMessages() uint64 }

// Run runs the benchmark and prints its tables to o.Out.
func Run(t testing.TB, o Options) {
	t.Helper()
	nettest.RequireTool(t, "wg")
	if !o.Kernel {
		nettest.RequireTool(t, "wireguard-go")
	}
	ours, theirs := newSide(t, o.Kernel, 'o'), newSide(t, o.Kernel, 't')
	ours.k = openKernel(t, ours.ns)
	theirs.k = openKernel(t, theirs.ns)
	l, err := nettest.OpenLedger(filepath.Join(ours.dir, "ledger.json"))
	if err != nil {
		t.Fatal(err)
	}
	eng := &engine.Engine{Kernel: ours.k, Ledger: l}
	b := bench{t: t, o: o, ours: ours, theirs: theirs, eng: eng, confFile: filepath.Join(ours.dir, "netreconcile.yaml"), wgFile: filepath.Join(theirs.dir, "wg.conf")}
	// Our device is made by netreconcile, theirs by ip or wireguard-go.
	b.reconcile(b.yaml(nil, -1))
	if o.Kernel {
		nettest.IP(t, theirs.ns, "link", "add", theirs.dev, "type", "wireguard")
	} else {
		b.inNS(theirs, "wireguard-go", theirs.dev)
	}
	impl := "wireguard-go"
	if o.Kernel {
		impl = "the kernel module"
	} else {
		for _, s := range []*side{ours, theirs} {
			if s.daemon, err = daemonPID(s.dev); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := growth.Bench{Name: "bench-wg", Unit: "peers", Sizes: o.Sizes,
		Detail: fmt.Sprintf("%s; median of %d rounds, the tools taking turns", impl, o.Rounds)}
	var out strings.Builder
	if err := g.Run(&out, b.size); err != nil {
		t.Error(err)
	}
	fmt.Fprint(o.Out, out.String())
}

// side is one device: ours (netreconcile's) or theirs (wg's).
type side struct {
	ns, dev, dir, keyFile string
	priv                  wgtypes.Key
	k                     *kernel.Netlink
	// daemon is the device's wireguard-go process (0: the kernel module).
	daemon int
}

func newSide(t testing.TB, kernelDev bool, c byte) *side {
	t.Helper()
	priv, err := wgtypes.GeneratePrivateKey()
	if err != nil {
		t.Fatal(err)
	}
	// wireguard-go's control sockets are shared by every namespace: the
	// names are the host's own.
	s := &side{ns: nettest.NewNetNS(t), dev: fmt.Sprintf("wgb%d%c", os.Getpid()%100000, c), dir: t.TempDir(), priv: priv}
	s.keyFile = filepath.Join(s.dir, "wg.key")
	if err := os.WriteFile(s.keyFile, []byte(priv.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Registered after the namespace: runs first, so that wireguard-go
	// exits with its device before the namespace goes. A kernel device
	// goes with its namespace, in the background: deleting one of 10,000
	// peers takes minutes in the emulated guest.
	if !kernelDev {
		t.Cleanup(func() { _ = nettest.ExecErr("ip", "-n", s.ns, "link", "del", s.dev) })
	}
	return s
}

func openKernel(t testing.TB, ns string) *kernel.Netlink {
	t.Helper()
	k, err := kernel.Open("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	return k
}

type bench struct {
	t            testing.TB
	o            Options
	ours, theirs *side
	eng          *engine.Engine
	confFile     string
	wgFile       string
	keys         []wgtypes.Key
}

// peer i's allowed IPs, endpoint and keepalive; change adds an allowed IP.
func peerIP(i int) string { return fmt.Sprintf("10.%d.%d.%d/32", 100+i/62500, i/250%250, 1+i%250) }

func endpoint(i int) string { return fmt.Sprintf("192.0.2.%d:%d", 1+i%250, 51820+i/250) }

const extraIP = "10.250.0.0/24"

// yaml is our file for keys; peer change gets extraIP (-1: none).
func (b *bench) yaml(keys []wgtypes.Key, change int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "version: 1\nlinks:\n  %s:\n    kind: wireguard\n    state: down\n    wireguard:\n      private-key-file: %s\n      listen-port: 51820\n", b.ours.dev, b.ours.keyFile)
	if !b.o.Kernel {
		s.WriteString("      userspace: true\n")
	}
	if len(keys) > 0 {
		s.WriteString("      peers:\n")
	}
	for i, k := range keys {
		ips := peerIP(i)
		if i == change {
			ips += ", " + extraIP
		}
		fmt.Fprintf(&s, "        - {public-key: %s, allowed-ips: [%s], persistent-keepalive: 25s, endpoints: [\"%s\"]}\n", k, ips, endpoint(i))
	}
	return s.String()
}

// wgConf is wg's file for the same peers.
func (b *bench) wgConf(keys []wgtypes.Key, change int) string {
	var s strings.Builder
	fmt.Fprintf(&s, "[Interface]\nPrivateKey = %s\nListenPort = 51820\n", b.theirs.priv)
	for i, k := range keys {
		ips := peerIP(i)
		if i == change {
			ips += ", " + extraIP
		}
		fmt.Fprintf(&s, "\n[Peer]\nPublicKey = %s\nAllowedIPs = %s\nEndpoint = %s\nPersistentKeepalive = 25\n", k, ips, endpoint(i))
	}
	return s.String()
}

// reconcile writes our file and runs a pass as `netreconcile apply` does
// (load, read, diff, apply), returning its time and the messages it sent.
func (b *bench) reconcile(conf string) (time.Duration, uint64) {
	b.t.Helper()
	r := b.reconcileTimed(conf)
	return r.total, r.sent
}

// timed is one timed pass of ours.
type timed struct {
	// load is the load's share of total (parse and validate the file),
	// which wg's own parse of its INI file has no counterpart of worth
	// measuring.
	total, load time.Duration
	// cpu is the CPU time of the pass and of the device's daemon.
	cpu  time.Duration
	sent uint64
}

// reconcileTimed is reconcile that also returns the load's share of the
// time and the CPU time.
func (b *bench) reconcileTimed(conf string) timed {
	b.t.Helper()
	if err := os.WriteFile(b.confFile, []byte(conf), 0o644); err != nil {
		b.t.Fatal(err)
	}
	sent0 := b.messages()
	cpu0 := selfCPU(b.t) + daemonCPU(b.t, b.ours.daemon)
	start := time.Now()
	cfg, err := desired.Load(b.confFile, "")
	if err != nil {
		b.t.Fatal(err)
	}
	load := time.Since(start)
	b.pass(cfg)
	total := time.Since(start)
	cpu := selfCPU(b.t) + daemonCPU(b.t, b.ours.daemon) - cpu0
	return timed{total: total, load: load, cpu: cpu, sent: b.messages() - sent0}
}

// selfCPU is the CPU time of this process so far, user and system: every
// thread's, the garbage collector's included.
func selfCPU(t testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clockTick is the unit of /proc/PID/stat's CPU times (USER_HZ, 100 on
// every Linux architecture this runs on).
const clockTick = 10 * time.Millisecond

// daemonCPU is the CPU time of process pid so far (0: none).
func daemonCPU(t testing.TB, pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's name, which may hold spaces: state
	// is the first, utime the 12th, stime the 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	if len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: utime %q, stime %q", pid, f[11], f[12])
	}
	return time.Duration(u+s) * clockTick
}

// daemonPID finds the wireguard-go process of device dev: the one whose
// command line is the program and the name.
func daemonPID(dev string) (int, error) {
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + p.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(args) == 2 && filepath.Base(args[0]) == "wireguard-go" && args[1] == dev {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no wireguard-go process of %s", dev)
}

// pass reads, diffs and applies cfg: the daemon's pass.
func (b *bench) pass(cfg *desired.Config) {
	b.t.Helper()
	plan, err := b.eng.Plan(cfg.State)
	if err != nil {
		b.t.Fatal(err)
	}
	res, err := b.eng.Apply(context.Background(), plan)
	if err == nil {
		err = res.Err()
	}
	if err != nil {
		b.t.Fatal(err)
	}
}

func (b *bench) messages() uint64 {
	if c, ok := any(b.ours.k).(messageCounter); ok {
		return c.WireGuardMessages()
	}
	return 0
}

// wg runs wg with a file of conf (when cmd takes one) in their namespace.
func (b *bench) wg(cmd, conf string) time.Duration {
	b.t.Helper()
	d, _ := b.wgTimed(cmd, conf)
	return d
}

// wgTimed is wg that also returns the CPU time of wg and of the device's
// daemon.
func (b *bench) wgTimed(cmd, conf string) (time.Duration, time.Duration) {
	b.t.Helper()
	args := []string{cmd, b.theirs.dev}
	if conf != "" {
		if err := os.WriteFile(b.wgFile, []byte(conf), 0o600); err != nil {
			b.t.Fatal(err)
		}
		args = append(args, b.wgFile)
	} else {
		args = append(args, "dump")
	}
	cpu0 := daemonCPU(b.t, b.theirs.daemon)
	start := time.Now()
	cpu := b.inNS(b.theirs, "wg", args...)
	d := time.Since(start)
	return d, cpu + daemonCPU(b.t, b.theirs.daemon) - cpu0
}

// inNS runs a program in s's namespace, forked from a thread inside it,
// and returns its CPU time.
func (b *bench) inNS(s *side, prog string, args ...string) time.Duration {
	b.t.Helper()
	var out []byte
	var cpu time.Duration
	err := s.k.InNamespace(func() error {
		cmd := exec.Command(prog, args...)
		var err error
		out, err = cmd.CombinedOutput()
		if cmd.ProcessState != nil {
			cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		return err
	})
	if err != nil {
		b.t.Fatalf("%s %s in %s: %v: %s", prog, strings.Join(args, " "), s.ns, err, out)
	}
	return cpu
}

// empty removes every peer of both devices (not timed): wg setconf with
// the same interface settings, so that our device matches our file.
func (b *bench) empty() {
	b.t.Helper()
	for _, s := range []*side{b.ours, b.theirs} {
		f := filepath.Join(s.dir, "empty.conf")
		if err := os.WriteFile(f, []byte(fmt.Sprintf("[Interface]\nPrivateKey = %s\nListenPort = 51820\n", s.priv)), 0o600); err != nil {
			b.t.Fatal(err)
		}
		b.inNS(s, "wg", "setconf", s.dev, f)
	}
}

func (b *bench) peers(s *side) int {
	b.t.Helper()
	d, err := s.k.WireGuardDevice(s.dev)
	if err != nil {
		b.t.Fatal(err)
	}
	return len(d.Peers)
}

// size measures n peers.
func (b *bench) size(n int) ([]growth.Measure, error) {
	b.t.Helper()
	for len(b.keys) < n {
		k, err := wgtypes.GenerateKey()
		if err != nil {
			return nil, err
		}
		b.keys = append(b.keys, k)
	}
	keys := b.keys[:n]
	changed := n / 2
	conf, confChanged := b.yaml(keys, -1), b.yaml(keys, changed)
	wgc, wgChanged := b.wgConf(keys, -1), b.wgConf(keys, changed)
	profile := b.o.CPUProfile != "" && n == b.o.Sizes[len(b.o.Sizes)-1]

	var cfgO, cfgT, cfgLoad, cfgPass, cfgCPUO, cfgCPUT, oneO, oneT, noO, noT, passO, routeO, readO, readT []time.Duration
	var cfgSent, oneSent, noSent, passSent uint64
	var passAllocs, readAllocs float64
	for r := 0; r < b.o.Rounds; r++ {
		b.empty()
		var ours timed
		var theirs, theirsCPU time.Duration
		if r%2 == 0 {
			ours = b.reconcileTimed(conf)
			theirs, theirsCPU = b.wgTimed("setconf", wgc)
		} else {
			theirs, theirsCPU = b.wgTimed("setconf", wgc)
			ours = b.reconcileTimed(conf)
		}
		cfgSent = ours.sent
		cfgO, cfgLoad, cfgPass = append(cfgO, ours.total), append(cfgLoad, ours.load), append(cfgPass, ours.total-ours.load)
		cfgT, cfgCPUO, cfgCPUT = append(cfgT, theirs), append(cfgCPUO, ours.cpu), append(cfgCPUT, theirsCPU)
		var d time.Duration
		if got, gotT := b.peers(b.ours), b.peers(b.theirs); got != n || gotT != n {
			return nil, fmt.Errorf("configured %d peers (wg: %d), want %d", got, gotT, n)
		}
		d, oneSent = b.reconcile(confChanged)
		oneO = append(oneO, d)
		oneT = append(oneT, b.wg("syncconf", wgChanged))
		if oneSent != 1 {
			b.t.Errorf("%d peers: the one-peer change sent %d messages, want 1", n, oneSent)
		}

		d, noSent = b.reconcile(confChanged)
		noO = append(noO, d)
		noT = append(noT, b.wg("syncconf", wgChanged))
		if noSent != 0 {
			b.t.Errorf("%d peers: a pass with no change sent %d messages, want 0", n, noSent)
		}

		cfg, err := desired.Load(b.confFile, "")
		if err != nil {
			return nil, err
		}
		var m0, m1 runtime.MemStats
		runtime.ReadMemStats(&m0)
		sent := b.messages()
		start := time.Now()
		b.pass(cfg)
		passO = append(passO, time.Since(start))
		runtime.ReadMemStats(&m1)
		passSent = b.messages() - sent
		passAllocs = float64(m1.Mallocs-m0.Mallocs) / float64(n)

		// Woken by a route: the devices are taken from the last read.
		b.eng.SetReread(actual.Fresh{Kinds: actual.Routes})
		start = time.Now()
		b.pass(cfg)
		routeO = append(routeO, time.Since(start))

		runtime.ReadMemStats(&m0)
		start = time.Now()
		if _, err := b.ours.k.WireGuardDevice(b.ours.dev); err != nil {
			return nil, err
		}
		readO = append(readO, time.Since(start))
		runtime.ReadMemStats(&m1)
		readAllocs = float64(m1.Mallocs-m0.Mallocs) / float64(n)
		readT = append(readT, b.wg("show", ""))
	}
	if profile {
		if err := b.profile(confChanged); err != nil {
			return nil, err
		}
	}
	med := growth.Median
	msgs := func(n uint64) string {
		if n == 1 {
			return "1 message"
		}
		return fmt.Sprintf("%d messages", n)
	}
	return []growth.Measure{
		{Name: "configure N peers", Ours: med(cfgO), Peer: "wg setconf", Theirs: med(cfgT), Note: msgs(cfgSent)},
		{Name: "configure N peers: of which the load of the file (parse, validate)", Ours: med(cfgLoad), Peer: "wg setconf", Theirs: med(cfgT)},
		{Name: "configure N peers: of which the pass (read, diff, apply; the file loaded)", Ours: med(cfgPass), Peer: "wg setconf", Theirs: med(cfgT)},
		{Name: "configure N peers: CPU time, each tool's with its device's", Ours: med(cfgCPUO), Peer: "wg setconf", Theirs: med(cfgCPUT)},
		{Name: "change one peer of N", Ours: med(oneO), Peer: "wg syncconf", Theirs: med(oneT), Note: msgs(oneSent)},
		{Name: "no change (load the file, read, diff)", Ours: med(noO), Peer: "wg syncconf", Theirs: med(noT), Note: msgs(noSent)},
		{Name: "the daemon's pass with no change (read, diff; the file loaded)", Ours: med(passO), Note: fmt.Sprintf("%s, %.2f allocations per peer", msgs(passSent), passAllocs)},
		{Name: "the daemon's pass woken by a route (the devices not read again)", Ours: med(routeO)},
		{Name: "read the device", Ours: med(readO), Peer: "wg show dump", Theirs: med(readT), Note: fmt.Sprintf("%.2f allocations per peer", readAllocs)},
	}, nil
}

// profileRuns is how many passes each CPU profile covers.
const profileRuns = 10

// profile writes CPU profiles of profileRuns no-change passes of conf
// (load, read, diff, apply) to o.CPUProfile and of as many configures of
// conf on an empty device to o.CPUProfile+".configure" (emptying the
// device is wg's work, in another process).
func (b *bench) profile(conf string) error {
	run := func(path string, f func()) error {
		out, err := os.Create(path)
		if err != nil {
			return err
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			return err
		}
		for range profileRuns {
			f()
		}
		pprof.StopCPUProfile()
		return nil
	}
	if err := run(b.o.CPUProfile, func() { b.reconcile(conf) }); err != nil {
		return err
	}
	if err := run(b.o.CPUProfile+".configure", func() { b.empty(); b.reconcile(conf) }); err != nil {
		return err
	}
	fmt.Fprintf(b.o.Out, "bench-wg: CPU profiles of %d no-change passes and %d configures at %d peers in %s and %s.configure\n",
		profileRuns, profileRuns, len(b.keys), b.o.CPUProfile, b.o.CPUProfile)
	return nil
}
