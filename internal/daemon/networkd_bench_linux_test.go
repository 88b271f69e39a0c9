package daemon_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// networkdRun is systemd-networkd's figures on the routes bench-memory
// gives the daemon, for the comparison the issue asks for (its 10k-route
// target is networkd's memory on the same routes), measured in the same run
// and the same way: steady resident memory after converging and idling.
type networkdRun struct {
	converge         time.Duration
	rss, anon, file  float64
	version, skipped string
}

// networkdBinary is where Debian installs systemd-networkd.
const networkdBinary = "/lib/systemd/systemd-networkd"

// runNetworkd starts systemd-networkd in a namespace of its own with a
// bridge mb0 and routes of table 100 through it (the daemon's 10k case),
// waits until the kernel holds them all, and measures it once idle. It
// runs without systemd as PID 1: in a mount namespace of its own, with its
// configuration bind-mounted on /run/systemd/network, the host's hidden
// behind an empty /etc/systemd/network, and /sys read-only, which tells it
// there is no udev to wait for (as in a container). skipped says why it
// could not run (not installed, no systemd-network user).
func runNetworkd(t *testing.T, routes int) networkdRun {
	t.Helper()
	if _, err := os.Stat(networkdBinary); err != nil {
		return networkdRun{skipped: "systemd-networkd is not installed (Debian: systemd)"}
	}
	u, err := user.Lookup("systemd-network")
	if err != nil {
		return networkdRun{skipped: "no systemd-network user: " + err.Error()}
	}
	version := ""
	if out, err := exec.Command(networkdBinary, "--version").Output(); err == nil {
		version = strings.Fields(string(out) + " ?")[1]
	}
	ns := churnNS(t)
	dir := t.TempDir()
	netdir := filepath.Join(dir, "network")
	if err := os.Mkdir(netdir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeInPlace(t, filepath.Join(netdir, "mb0.netdev"), "[NetDev]\nName=mb0\nKind=bridge\n")
	var b bytes.Buffer
	b.WriteString("[Match]\nName=mb0\n[Network]\nConfigureWithoutCarrier=yes\nLinkLocalAddressing=no\nIPv6AcceptRA=no\n")
	for i := range routes {
		fmt.Fprintf(&b, "[Route]\nDestination=%s\nTable=100\nScope=link\n", churnPrefix(1<<16, i))
	}
	writeInPlace(t, filepath.Join(netdir, "mb0.network"), b.String())
	script := fmt.Sprintf(`set -e
mount -t tmpfs tmpfs /run/systemd
mkdir -p /run/systemd/network /run/systemd/netif
chown %s:%s /run/systemd/netif
mount --bind %s /run/systemd/network
mount -t tmpfs tmpfs /etc/systemd/network
umount /sys
mount -t sysfs -o ro sysfs /sys
exec %s`, u.Uid, u.Gid, netdir, networkdBinary)
	var log bytes.Buffer
	cmd := exec.Command("ip", "netns", "exec", ns, "unshare", "--mount", "--propagation", "private", "sh", "-c", script)
	cmd.Stdout, cmd.Stderr = &log, &log
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start systemd-networkd: %v", err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	for n := 0; n < routes; {
		if time.Since(start) > 10*time.Minute {
			t.Fatalf("systemd-networkd holds %d of %d routes after 10 minutes:\n%s", n, routes, log.String())
		}
		time.Sleep(50 * time.Millisecond)
		out, err := exec.Command("ip", "-n", ns, "-4", "route", "show", "table", "100").Output()
		if err == nil {
			n = bytes.Count(out, []byte("\n"))
		}
	}
	r := networkdRun{converge: time.Since(start), version: version}
	pid := cmd.Process.Pid // ip, unshare and sh each exec the next
	idle(t, pid)
	time.Sleep(12 * time.Second)
	r.rss, _, r.file = procMemory(t, pid)
	r.anon = r.rss - r.file
	return r
}
