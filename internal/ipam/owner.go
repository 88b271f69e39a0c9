package ipam

import (
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
)

// Owner IDs are free-form, but these forms say how to tell whether their owner still exists,
// so that `netreconcile ipam gc` can free their addresses without knowing who made them.
const (
	// OwnerPID names a process: "pid:1234".
	OwnerPID = "pid:"
	// OwnerNetns names a network namespace by a path: "netns:/run/netns/blue".
	OwnerNetns = "netns:"
	// OwnerConfig names an object of the configuration: "config:link/wg0". Only the daemon,
	// which has the configuration, can tell whether it still exists.
	OwnerConfig = "config:"
)

// ConfigOwner returns the owner ID of a configuration object, e.g. ConfigOwner("link", "wg0").
func ConfigOwner(kind, name string) string { return OwnerConfig + kind + "/" + name }

// OwnerAlive reports whether the owner of a pid: or netns: ID still exists. Any other owner is
// reported alive: only whoever made it can tell.
func OwnerAlive(owner string) bool {
	if s, ok := strings.CutPrefix(owner, OwnerPID); ok {
		pid, err := strconv.Atoi(s)
		return err != nil || pid <= 0 || processExists(pid)
	}
	if path, ok := strings.CutPrefix(owner, OwnerNetns); ok {
		_, err := os.Stat(path)
		return !errors.Is(err, fs.ErrNotExist)
	}
	return true
}
