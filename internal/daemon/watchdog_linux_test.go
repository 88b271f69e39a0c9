package daemon_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bridges is a file declaring n bridges.
func bridges(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\n")
	if n > 0 {
		b.WriteString("links:\n")
	}
	for i := range n {
		fmt.Fprintf(&b, "  nrwd%d: {kind: bridge}\n", i)
	}
	return b.String()
}

// Finding 6 of issue 12: a pass longer than the watchdog interval that
// keeps making progress keeps the watchdog fed. Deleting 100 bridges takes
// seconds (the kernel waits for RCU on each); with WATCHDOG_USEC=400ms the
// daemon must send WATCHDOG=1 during that pass, not only between passes
// (systemd would kill it mid-pass). The test measures the pass from the
// edit to the STATUS= it sends at its end and fails, rather than passing
// vacuously, if the pass is too short to tell.
func TestWatchdogFedDuringLongPass(t *testing.T) {
	t.Parallel()
	// NETRECONCILE_WATCHDOG_BRIDGES=1300 measures the worst case the
	// unit's WatchdogSec is sized from (docs/daemon.md).
	n := 100
	if v, err := strconv.Atoi(os.Getenv("NETRECONCILE_WATCHDOG_BRIDGES")); err == nil && v > 0 {
		n = v
	}
	const every = 200 * time.Millisecond // WATCHDOG_USEC / 2
	e := newEnv(t, bridges(n))
	p := e.start(t, []string{"WATCHDOG_USEC=400000"})
	p.waitMsg(0, "READY=1", time.Minute)
	// settle() cannot tell: the pings never stop. The passes the creation
	// triggered are over well within a second on a quiet machine; on a
	// loaded one a pass of theirs may still end after the edit, and the
	// pass that deletes the bridges is the one that says 0 objects.
	time.Sleep(time.Second)

	from := p.count()
	start := time.Now()
	writeByRename(t, e.config, bridges(0))
	end := from
	for {
		i, st := p.waitMsg(end, "STATUS=", 15*time.Minute)
		if strings.Contains(st, "STATUS=converged: 0 objects") {
			end = i
			break
		}
		end = i + 1
	}
	took := p.arrived(end).Sub(start)
	if took < 5*every {
		t.Fatalf("the pass deleting %d bridges took %s: too short to tell pings during a pass from pings between passes; raise n", n, took)
	}
	pings, last, gap := 0, start, time.Duration(0)
	for i := from; i < end; i++ {
		if hasLine(p.messages()[i], "WATCHDOG=1") {
			pings++
			gap = max(gap, p.arrived(i).Sub(last))
			last = p.arrived(i)
		}
	}
	gap = max(gap, p.arrived(end).Sub(last))
	t.Logf("deleting %d bridges: one pass of %s, %d WATCHDOG=1 during it, longest gap %s", n, took.Round(time.Millisecond), pings, gap.Round(time.Millisecond))
	// Without pings during the pass at most one comes, between the edit
	// and the start of the pass.
	if pings < 3 {
		t.Errorf("%d WATCHDOG=1 during a pass of %s (interval %s), want one per interval", pings, took.Round(time.Millisecond), every)
	}
}
