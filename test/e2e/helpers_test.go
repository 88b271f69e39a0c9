package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// Full paths of the real tools in the guest: busybox provides applets of the same names
// with fewer features (its ip knows neither `netns` nor `encap fou`).
const (
	ipBin  = "/usr/sbin/ip"
	nftBin = "/usr/sbin/nft"
	wgBin  = "/usr/bin/wg"
)

// cmdTimeout bounds every command a helper runs, so a hung tool fails its test instead of
// eating the VM's global timeout.
const cmdTimeout = 60 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv("NETRECONCILE_VM") != "1" {
		// These tests create links, tunnels and rules in the kernel and need modules this
		// host may lack: they run only inside the test VM.
		fmt.Println("e2e: skipped: run inside the test VM with `make vm-test` (NETRECONCILE_VM is not 1)")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// NetNS is a named network namespace (/run/netns/<Name>) owned by one test. Being named,
// it can also be reached by `ip -n <Name>` and by programs given its path.
type NetNS struct {
	Name   string
	Handle netns.NsHandle
	// NL is a netlink handle bound to the namespace: use it from any goroutine, without
	// entering the namespace.
	NL *netlink.Handle
}

var nsSeq atomic.Int64

var nsNameUnsafe = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// nsName derives a namespace name from the test's name, unique within the run.
func nsName(t testing.TB, suffix string) string {
	base := nsNameUnsafe.ReplaceAllString(t.Name(), "_")
	if len(base) > 40 {
		base = base[:40]
	}
	if suffix != "" {
		base += "-" + suffix
	}
	return fmt.Sprintf("%s-%d", base, nsSeq.Add(1))
}

// newNetNS creates a fresh named network namespace with loopback up and removes it when
// the test ends. The calling thread stays in its own namespace; enter the new one with
// ns.Do, or use ns.NL. The name is derived from the test's name and suffix.
func newNetNS(t testing.TB, suffix string) *NetNS {
	t.Helper()
	return newNamedNetNS(t, nsName(t, suffix))
}

// newNamedNetNS is newNetNS with an exact name, for files that name a
// namespace (a veth's peer-netns). Tests that use one must not run in parallel.
func newNamedNetNS(t testing.TB, name string) *NetNS {
	t.Helper()

	// netns.NewNamed switches the calling thread into the new namespace: keep the thread
	// to ourselves until it is back.
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("get current network namespace: %v", err)
	}
	h, nerr := netns.NewNamed(name)
	rerr := netns.Set(orig)
	orig.Close()
	if rerr == nil {
		runtime.UnlockOSThread()
	} // else: the thread stays locked and dies with its goroutine, never reused.
	if nerr != nil {
		t.Fatalf("create network namespace %s: %v", name, nerr)
	}
	if rerr != nil {
		t.Fatalf("restore network namespace after creating %s: %v", name, rerr)
	}

	// Only the families the kernel always has: the default set includes NETLINK_XFRM,
	// which fails without xfrm_user. NETLINK_GENERIC matters: a handle without it sends
	// generic netlink requests (FoU) through a socket of the calling thread's namespace.
	nl, err := netlink.NewHandleAt(h, unix.NETLINK_ROUTE, unix.NETLINK_GENERIC)
	if err != nil {
		h.Close()
		_ = netns.DeleteNamed(name)
		t.Fatalf("netlink handle in %s: %v", name, err)
	}
	ns := &NetNS{Name: name, Handle: h, NL: nl}
	t.Cleanup(func() {
		nl.Close()
		h.Close()
		if err := netns.DeleteNamed(name); err != nil {
			t.Errorf("delete network namespace %s: %v", name, err)
		}
	})

	lo, err := nl.LinkByName("lo")
	if err != nil {
		t.Fatalf("find lo in %s: %v", name, err)
	}
	if err := nl.LinkSetUp(lo); err != nil {
		t.Fatalf("set lo up in %s: %v", name, err)
	}
	return ns
}

// enter runs fn on the calling goroutine, locked to its OS thread, with that thread in
// the namespace; the thread's namespace is restored afterwards. Goroutines that fn starts
// run on other threads, outside the namespace.
func (ns *NetNS) enter(fn func() error) (err error) {
	runtime.LockOSThread()
	orig, err := netns.Get()
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("get current network namespace: %w", err)
	}
	if err := netns.Set(ns.Handle); err != nil {
		orig.Close()
		runtime.UnlockOSThread()
		return fmt.Errorf("enter network namespace %s: %w", ns.Name, err)
	}
	defer func() {
		rerr := netns.Set(orig)
		orig.Close()
		if rerr != nil {
			// Leave the thread locked: the runtime ends it with the goroutine instead of
			// handing a thread in the wrong namespace to other code.
			err = errors.Join(err, fmt.Errorf("restore network namespace: %w", rerr))
			return
		}
		runtime.UnlockOSThread()
	}()
	return fn()
}

// Do runs fn inside the namespace (see enter). Package-level netlink calls, wgctrl.New,
// sockets and child processes made in fn belong to the namespace. t.Fatal in fn is fine.
func (ns *NetNS) Do(t testing.TB, fn func()) {
	t.Helper()
	if err := ns.enter(func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// withNetNS runs fn inside a fresh namespace named after the test (newNetNS + Do): the
// pattern of vishvananda/netlink's setUpNetlinkTest, with the original namespace restored.
func withNetNS(t testing.TB, fn func(ns *NetNS)) {
	t.Helper()
	ns := newNetNS(t, "")
	ns.Do(t, func() { fn(ns) })
}

// Exec runs a program inside the namespace and returns its stdout and stderr. The child
// is started from a thread in the namespace, so it inherits it.
func (ns *NetNS) Exec(stdin string, prog string, args ...string) (stdout, stderr string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := ns.enter(cmd.Start); err != nil {
		return "", "", fmt.Errorf("start %s: %w", prog, err)
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (killed after %v)", err, cmdTimeout)
	}
	return o.String(), e.String(), err
}

// Run is Exec that fails the test when the program fails, showing its stderr.
func (ns *NetNS) Run(t testing.TB, prog string, args ...string) string {
	t.Helper()
	out, errOut, err := ns.Exec("", prog, args...)
	if err != nil {
		t.Fatalf("in netns %s: %s %s: %v\nstdout:\n%s\nstderr:\n%s", ns.Name, prog, strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// IP runs the real iproute2 `ip` in the namespace.
func (ns *NetNS) IP(t testing.TB, args ...string) string {
	t.Helper()
	return ns.Run(t, ipBin, args...)
}

// Nft runs `nft` in the namespace.
func (ns *NetNS) Nft(t testing.TB, args ...string) string {
	t.Helper()
	return ns.Run(t, nftBin, args...)
}

// NftApply feeds a ruleset to `nft -f -` in the namespace.
func (ns *NetNS) NftApply(t testing.TB, ruleset string) {
	t.Helper()
	out, errOut, err := ns.Exec(ruleset, nftBin, "-f", "-")
	if err != nil {
		t.Fatalf("in netns %s: nft -f -: %v\n%s%s\nruleset:\n%s", ns.Name, err, out, errOut, ruleset)
	}
}

// WG runs `wg` in the namespace.
func (ns *NetNS) WG(t testing.TB, args ...string) string {
	t.Helper()
	return ns.Run(t, wgBin, args...)
}

// netreconcileBin returns the netreconcile binary under test ($NETRECONCILE_BIN). Its
// absence fails the test: a scenario skipped for want of the binary would prove nothing.
func netreconcileBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("NETRECONCILE_BIN")
	if bin == "" {
		t.Fatal("no netreconcile binary in the VM image (NETRECONCILE_BIN unset)")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("NETRECONCILE_BIN: %v", err)
	}
	return bin
}

// runNetreconcile runs the netreconcile binary with args inside the namespace, fails the
// test when it exits non-zero, and returns its stdout. For expected failures use
// ns.Exec("", netreconcileBin(t), args...).
func runNetreconcile(t testing.TB, ns *NetNS, args ...string) string {
	t.Helper()
	bin := netreconcileBin(t)
	out, errOut, err := ns.Exec("", bin, args...)
	if errOut != "" {
		t.Logf("netreconcile %s: stderr:\n%s", strings.Join(args, " "), errOut)
	}
	if err != nil {
		t.Fatalf("in netns %s: netreconcile %s: %v\nstdout:\n%s", ns.Name, strings.Join(args, " "), err, out)
	}
	return out
}

// example returns the path of examples/<name>, failing the test when it does not exist.
func example(t testing.TB, name string) string {
	t.Helper()
	dir := os.Getenv("NETRECONCILE_EXAMPLES")
	if dir == "" {
		dir = filepath.Join("..", "..", "examples")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("example %s: %v", name, err)
	}
	return p
}

// requireModules makes sure the kernel has the named modules, loading them with modprobe
// when needed; a module that is missing from the image fails the test (add it to
// test/vm/modules.txt).
func requireModules(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		name = strings.ReplaceAll(name, "-", "_")
		if _, err := os.Stat("/sys/module/" + name); err == nil {
			continue
		}
		if builtinModule(name) {
			continue
		}
		out, err := exec.Command("/sbin/modprobe", name).CombinedOutput()
		if err != nil {
			t.Fatalf("kernel module %s is not loaded and modprobe failed: %v: %s (is it in test/vm/modules.txt?)", name, err, out)
		}
	}
}

func builtinModule(name string) bool {
	release, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/lib/modules", string(bytes.TrimSpace(release)), "modules.builtin"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		base := strings.TrimSuffix(filepath.Base(line), ".ko")
		if strings.ReplaceAll(base, "-", "_") == name {
			return true
		}
	}
	return false
}
