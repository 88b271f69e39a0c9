package daemon

import (
	"syscall"

	"golang.org/x/net/bpf"
)

// FixturePrefilter is the route prefilter of the filter tests' snapshot
// (filterFixture), for the tests of package daemon_test.
func FixturePrefilter() []bpf.Instruction { return routePrefilter(filterFixture()) }

// FixtureWakesOnRoute is the exact filter's judgement of a route
// notification against that snapshot; ok is false for one it cannot
// decode.
func FixtureWakesOnRoute(m syscall.NetlinkMessage) (wake, ok bool) {
	e, ok := decodeRoute(m)
	if !ok {
		return true, false
	}
	return filterFixture().route(e), true
}
