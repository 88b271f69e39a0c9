package docs

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// A runnable block runs as its reader would run it on a host that has just
// had the package installed, without touching this machine:
//
//   - in a fresh network namespace (nettest.NewNetNS), entered with ip netns
//     exec, so "the host's network" is the namespace's;
//   - in a mount namespace of its own in which /etc and /var/lib are
//     overlays on the machine's (what the block writes there, such as
//     /etc/netreconcile/netreconcile.yaml or the state directory, goes to a
//     tmpfs and vanishes with it), /tmp, /run/netns and /mnt are tmpfs of
//     its own, and /run/systemd is hidden: systemd is not the service
//     manager there, so a safe apply's rollback timer is a process of the
//     test's whatever the machine runs, never a unit of the machine's;
//   - with the packaged default configuration in /etc/netreconcile (what
//     the package installs), the binary built as make build builds it first
//     on PATH, and sudo a shell function (the test is root; sudo's
//     secure_path would drop the binary's directory);
//   - with set -e: every command of the block must succeed.
//
// Each block runs alone, in order of the file, with a fresh namespace.

// setup is the first stage, in the new mount namespace: $1 is the test's
// directory (bin/, netreconcile.yaml), $2 the network namespace, $3 the
// block's file.
const setup = `set -e
W=$1 NS=$2 BLOCK=$3
mount -t tmpfs docs-test /mnt
mkdir /mnt/bin /mnt/etc.up /mnt/etc.work /mnt/lib.up /mnt/lib.work
cp "$W/bin/netreconcile" /mnt/bin/
cp "$BLOCK" /mnt/block.sh
mount -t overlay docs-test -o lowerdir=/etc,upperdir=/mnt/etc.up,workdir=/mnt/etc.work /etc
mount -t overlay docs-test -o lowerdir=/var/lib,upperdir=/mnt/lib.up,workdir=/mnt/lib.work /var/lib
mkdir -p /etc/netreconcile/conf.d
install -m 0644 "$W/netreconcile.yaml" /etc/netreconcile/netreconcile.yaml
if [ -d /run/systemd ]; then mount -t tmpfs docs-test /run/systemd; fi
mount -t tmpfs docs-test /tmp
mkdir -m 0700 /tmp/work
exec ip netns exec "$NS" sh -c 'mount -t tmpfs docs-test /run/netns && cd /tmp/work && exec sh -e /mnt/block.sh'
`

// prelude starts every block; %s is the run's mark, in the environment of
// whatever the block starts (stopLeftovers).
const prelude = `export PATH=/mnt/bin:$PATH HOME=/tmp/work NETRECONCILE_DOCS_TEST=%s
sudo() { "$@"; }
`

// TestRunnableBlocks runs every block marked "sh runnable" in README.md and
// docs/*.md.
func TestRunnableBlocks(t *testing.T) {
	nettest.RequireRoot(t)
	for _, tool := range []string{"ip", "unshare", "jq", "sed", "install"} {
		nettest.RequireTool(t, tool)
	}
	if fi, err := os.Stat("/mnt"); err != nil || !fi.IsDir() {
		t.Fatalf("no /mnt to mount the test's scratch on: %v", err)
	}
	w := t.TempDir()
	if err := os.MkdirAll(filepath.Join(w, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w, "bin", "netreconcile"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	packaged, err := os.ReadFile(filepath.Join(repo, "packaging", "netreconcile.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w, "netreconcile.yaml"), packaged, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, name := range sortedNames(docFiles(t)) {
		for _, b := range Blocks(name, docFiles(t)[name]) {
			if !b.Runnable() {
				continue
			}
			ran++
			t.Run(fmt.Sprintf("%s:%d", name, b.Line), func(t *testing.T) {
				runBlock(t, w, b)
			})
		}
	}
	if ran < 4 {
		t.Errorf("only %d runnable blocks", ran)
	}
}

// runBlock runs one block in its sandbox, and stops whatever it left
// running (a rollback timer): the processes of the test's binary.
func runBlock(t *testing.T, w string, b Block) {
	ns := nettest.NewNetNS(t)
	file := filepath.Join(w, "block.sh")
	mark := fmt.Sprintf("%d-%s", os.Getpid(), ns)
	if err := os.WriteFile(file, []byte(fmt.Sprintf(prelude, mark)+b.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--propagation", "private", "sh", "-c", setup, "setup", w, ns, file)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Cleanup(func() { stopLeftovers(t, mark) })
	if err != nil {
		t.Fatalf("%s:%d: the block failed (%v) after %s:\n%s\nblock:\n%s", b.File, b.Line, err, time.Since(start).Round(time.Millisecond), out.String(), b.Text)
	}
	t.Logf("ran in %s:\n%s", time.Since(start).Round(time.Millisecond), out.String())
}

// stopLeftovers kills, by pid, the processes a block left running (a safe
// apply's rollback timer that a failed block did not confirm): those whose
// environment holds the block's mark.
func stopLeftovers(t *testing.T, mark string) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid := 0
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), []byte("\x00NETRECONCILE_DOCS_TEST="+mark+"\x00")) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		t.Logf("stopping pid %d left running by the block: %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
