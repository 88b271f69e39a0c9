package daemon_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// wireguardGoPID returns the pid of the wireguard-go process serving dev, or 0.
func wireguardGoPID(t *testing.T, dev string) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")
		if len(args) >= 2 && filepath.Base(args[0]) == "wireguard-go" && args[len(args)-1] == dev {
			return pid
		}
	}
	return 0
}

// Finding 14 of issue 12 (wireguard-go part): the daemon runs wireguard-go
// from its configured absolute path, never from $PATH, and with an
// environment of its own: neither the credentials directory (where the
// private key is) nor the notify socket (with which it could tell systemd
// the service is ready or stopping) reach it.
func TestWireGuardGoPathAndEnvironment(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "wireguard-go")
	dev := wgDevName('e')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, _ := wgKeyFile(t, e.dir, "wg.key")
	writeInPlace(t, e.config, "version: 1\nlinks:\n"+wgLink(dev, keyFile))

	// A wireguard-go first in $PATH that leaves a mark when run.
	bin := filepath.Join(e.dir, "bin")
	mark := filepath.Join(e.dir, "path-wireguard-go-ran")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "wireguard-go"), []byte("#!/bin/sh\ntouch "+mark+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	creds := t.TempDir()
	p := e.start(t, []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "CREDENTIALS_DIRECTORY=" + creds})
	p.waitMsg(0, "READY=1", startDeadline)

	if _, err := os.Stat(mark); err == nil {
		t.Error("the daemon ran the wireguard-go it found in $PATH")
	}
	pid := wireguardGoPID(t, dev)
	if pid == 0 {
		t.Fatalf("no wireguard-go process for %s", dev)
	}
	env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range bytes.Split(env, []byte{0}) {
		name, _, _ := strings.Cut(string(kv), "=")
		switch name {
		case "NOTIFY_SOCKET", "CREDENTIALS_DIRECTORY", "PATH", "WATCHDOG_USEC", "INVOCATION_ID":
			t.Errorf("wireguard-go's environment holds %s", name)
		}
	}
}

// devicePublicKey is the public key of a WireGuard device as wg shows it.
func devicePublicKey(t *testing.T, ns, dev string) string {
	t.Helper()
	return strings.TrimSpace(nettest.InNS(t, ns, "wg", "show", dev, "public-key"))
}

// Finding 2 of issue 12: a rotated private key is applied. The key file is
// replaced (by rename, as an editor or Ansible does) while the YAML stays
// the same: the daemon must set the new key on the device. Then the old key
// is set by hand with wg set and a reload must repair that drift with the
// current file's key, not the one read at start. No key is ever logged.
func TestRotatedPrivateKeyIsApplied(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "wireguard-go")
	nettest.RequireTool(t, "wg")
	dev := wgDevName('k')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyFile, oldKey := wgKeyFile(t, e.dir, "wg.key")
	writeInPlace(t, e.config, "version: 1\nlinks:\n"+wgLink(dev, keyFile))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	if got := devicePublicKey(t, e.ns, dev); got != oldKey.PublicKey().String() {
		t.Fatalf("device public key %s, want the first key's %s", got, oldKey.PublicKey())
	}

	tmp, newKey := wgKeyFile(t, e.dir, ".wg.key.new")
	if err := os.Rename(tmp, keyFile); err != nil {
		t.Fatal(err)
	}
	eventually(t, editDeadline, "rotated key applied", func() bool {
		return devicePublicKey(t, e.ns, dev) == newKey.PublicKey().String()
	})

	// The old key, set by hand.
	oldFile := filepath.Join(t.TempDir(), "old.key")
	if err := os.WriteFile(oldFile, []byte(oldKey.String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nettest.InNS(t, e.ns, "wg", "set", dev, "private-key", oldFile)
	from := p.count()
	p.signal(syscall.SIGHUP)
	p.waitMsg(from, "READY=1", startDeadline)
	eventually(t, editDeadline, "hand-set key repaired with the current file's key", func() bool {
		return devicePublicKey(t, e.ns, dev) == newKey.PublicKey().String()
	})
	if log := p.Stderr(); strings.Contains(log, oldKey.String()) || strings.Contains(log, newKey.String()) {
		t.Error("a private key is in the daemon's log")
	}
}

// A key file outside the configuration's directory is watched too: its
// rotation is applied without a reload (the periodic resync is 5 min away).
func TestRotatedKeyOutsideConfigDirIsApplied(t *testing.T) {
	t.Parallel()
	nettest.RequireTool(t, "wireguard-go")
	nettest.RequireTool(t, "wg")
	dev := wgDevName('o')
	e := newEnv(t, "version: 1\n")
	deleteLinkAtCleanup(t, e.ns, dev)
	keyDir := t.TempDir()
	keyFile, _ := wgKeyFile(t, keyDir, "wg.key")
	writeInPlace(t, e.config, "version: 1\nlinks:\n"+wgLink(dev, keyFile))
	p := e.start(t, nil)
	p.waitMsg(0, "READY=1", startDeadline)
	// The passes the daemon's own writes triggered are over: only a wake-up
	// from the key's directory can bring the next one.
	p.settle()

	tmp, newKey := wgKeyFile(t, keyDir, ".wg.key.new")
	if err := os.Rename(tmp, keyFile); err != nil {
		t.Fatal(err)
	}
	eventually(t, editDeadline, "rotated key applied", func() bool {
		return devicePublicKey(t, e.ns, dev) == newKey.PublicKey().String()
	})
}
