// Package buildinfo is what the build stamps into the binary: the version
// and the commit it was built from. `make build` and `make deb` set both
// with -ldflags "-X" (see the Makefile: the package's version, from
// packaging/changelog and git); `netreconcile version` prints them, the daemon
// logs them at start and the metrics export them. A binary built without
// the stamps (go build, go test) says "dev" and "unknown", or what the Go
// toolchain recorded (go install ...@VERSION records the module version,
// and a build inside a git checkout its commit).
package buildinfo

import (
	"runtime"
	"runtime/debug"
	"sync"
)

// Set at build time with -ldflags "-X
// github.com/netreconcile/netreconcile/internal/buildinfo.version=... -X
// ....commit=...". Read them with Version and Commit.
var (
	version string
	commit  string
)

var fallback = sync.OnceValues(func() (v, c string) {
	v, c = "dev", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v, c
	}
	if m := bi.Main.Version; m != "" && m != "(devel)" {
		v = m
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			c = s.Value
		}
	}
	return v, c
})

// Version is the version the build was stamped with (such as 1.0.0, or
// 1.0.0~git3.abc1234 between tags, as the Debian package numbers it).
func Version() string {
	if version != "" {
		return version
	}
	v, _ := fallback()
	return v
}

// Commit is the git commit the binary was built from.
func Commit() string {
	if commit != "" {
		return commit
	}
	_, c := fallback()
	return c
}

// GoVersion is the Go toolchain that built the binary.
func GoVersion() string { return runtime.Version() }
