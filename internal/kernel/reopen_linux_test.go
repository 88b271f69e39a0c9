package kernel_test

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// A daemon given --netns /proc/PID/ns/net opens more handles on its
// namespace during its life (a safe-apply rollback at a deadline): they
// reach the same namespace after that process exits, through the
// descriptor the first handle holds. Transaction walk soak, seed
// 66364064226611 (root/proc): the daemon's rollback reopened the path and
// failed every second, the transaction pending past its deadline.
func TestTxWalkFindingReopenOutlivesTheProcessPath(t *testing.T) {
	ns := nettest.NewNetNS(t)
	nettest.IP(t, ns, "link", "add", "ro0", "type", "veth", "peer", "name", "ro1")
	holder := exec.Command("ip", "netns", "exec", ns, "sleep", "1000")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	want, err := os.Stat("/run/netns/" + ns)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf("/proc/%d/ns/net", holder.Process.Pid)
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil && os.SameFile(fi, want) {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the holder did not enter the namespace")
		}
	}
	k, err := kernel.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	_ = holder.Process.Signal(syscall.SIGKILL)
	_ = holder.Wait()
	if _, err := os.Stat(path); err == nil {
		t.Fatalf("%s outlived its process", path)
	}
	k2, err := k.Reopen()
	if err != nil {
		t.Fatalf("reopen after the process exited: %v", err)
	}
	defer k2.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(k2.NsHandle()), &st); err != nil {
		t.Fatal(err)
	}
	if ws := want.Sys().(*syscall.Stat_t); st.Ino != ws.Ino || st.Dev != ws.Dev {
		t.Fatalf("reopened namespace is inode %d, want %d", st.Ino, ws.Ino)
	}
	links, err := k2.Links()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range links {
		found = found || l.Name == "ro0"
	}
	if !found {
		t.Fatalf("the reopened handle does not see ro0: %+v", links)
	}
}
