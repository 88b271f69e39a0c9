package daemon

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// manyBridges declares n bridges b0..b(n-1).
func manyBridges(n int) string {
	var b strings.Builder
	b.WriteString("version: 1\nlinks:\n")
	for i := range n {
		fmt.Fprintf(&b, "  b%d: {kind: bridge}\n", i)
	}
	return b.String()
}

// A pass that changes many objects logs the first DefaultLogChanges a line
// each and the rest as one count per kind and action; failures likewise
// (issue 16: converging 100k routes wrote 100k lines to the journal).
func TestChangeLinesCappedWithCounts(t *testing.T) {
	const n, failing = 350, 130
	e := newLoopEnv(t, manyBridges(n))
	for i := range failing {
		e.eng.fail[fmt.Sprintf("b%d", n-1-i)] = errors.New("resource busy")
	}
	e.start()
	e.run(100 * time.Millisecond)
	log := e.log.String()

	if got := strings.Count(log, "msg=applied kind=link"); got != DefaultLogChanges {
		t.Errorf("%d change lines, want %d", got, DefaultLogChanges)
	}
	more := fmt.Sprintf(`msg="applied %d more changes, one line each at debug level" kind=link action=create count=%d`, n-failing-DefaultLogChanges, n-failing-DefaultLogChanges)
	if !strings.Contains(log, more) {
		t.Errorf("no summary line %s", more)
	}
	if got := strings.Count(log, "msg=\"change failed\""); got != DefaultLogChanges {
		t.Errorf("%d failure lines, want %d", got, DefaultLogChanges)
	}
	failedMore := fmt.Sprintf(`msg="%d more changes failed, one line each at debug level" kind=link action=create count=%d`, failing-DefaultLogChanges, failing-DefaultLogChanges)
	if !strings.Contains(log, failedMore) {
		t.Errorf("no summary line %s", failedMore)
	}
	// Every failure has its own backoff, logged or not.
	if len(e.d.bo.m) != failing {
		t.Errorf("%d objects in the backoff table, want %d", len(e.d.bo.m), failing)
	}
	if t.Failed() {
		t.Logf("log:\n%s", log)
	}
}

// Under the limit nothing changes: a line per change, no summary.
func TestFewChangesLoggedEach(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	e.start()
	log := e.log.String()
	if strings.Count(log, "msg=applied kind=link") != 2 || strings.Contains(log, "more changes") {
		t.Errorf("log:\n%s", log)
	}
}
