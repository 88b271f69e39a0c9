package daemon_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nettest"
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
