package txwalk

import (
	"testing"
	"time"
)

// fakeChecker plays a step whose check of the kernel waited for a daemon
// longer than DeadlineBound while the pending transaction's deadline
// passed and a rollback ended it.
type fakeChecker struct {
	txn            *txnModel
	failing        string
	checks, observ int
}

func (c *fakeChecker) checkOnce(Step) *Failure {
	c.checks++
	if c.txn != nil {
		return &Failure{Check: c.failing, Msg: "not what the pending transaction made"}
	}
	return nil
}

func (c *fakeChecker) pendingTxn() *txnModel { return c.txn }

func (c *fakeChecker) observeEnd() *Failure {
	c.observ++
	c.txn = nil // the record says: rolled back at the deadline
	return nil
}

// A check that failed after the deadline is judged again once the record
// is read, however long the failed check itself took: the check of the
// kernel waits up to convergeBound for a daemon, longer than
// DeadlineBound, and the record was then never read; the rollback the
// daemon made at the deadline (before it applied an edit made in the
// window) was reported as a kernel that is not the edit.
// Likewise the check that a timer holds the deadline, when the timer
// rolled the transaction back and exited before the check looked.
// Transaction walk soak seeds 135496957163784 (root/proc-unnamed, step
// 10: edit v4 in place) and 125697354974570 (root/name, step 14); the
// timer's case in a replay of 135496957163784 on a loaded machine (step
// 4: begin --confirm-within 1s).
func TestTxWalkFindingRollbackDuringALongCheck(t *testing.T) {
	for _, check := range []string{"kernel", "files", "timer"} {
		for _, late := range []time.Duration{time.Second, convergeBound + time.Second} {
			c := &fakeChecker{txn: &txnModel{id: "t", deadline: time.Now().Add(-late)}, failing: check}
			if f := checkFollowing(c, Step{Op: opEdit}); f != nil {
				t.Errorf("%s, deadline %s ago: %v", check, late, f)
			}
			if c.observ != 1 || c.checks != 2 {
				t.Errorf("%s, deadline %s ago: record read %d times, checks run %d times; want 1 and 2", check, late, c.observ, c.checks)
			}
		}
	}
	// A failure with the transaction still pending past the bound stands,
	// and so does one before the deadline.
	stays := &stayingChecker{&fakeChecker{txn: &txnModel{id: "t", deadline: time.Now().Add(-convergeBound)}, failing: "kernel"}}
	if f := checkFollowing(stays, Step{Op: opEdit}); f == nil || f.Check != "kernel" {
		t.Errorf("a transaction pending past its bound: %v, want the kernel's failure", f)
	}
	early := &fakeChecker{txn: &txnModel{id: "t", deadline: time.Now().Add(time.Minute)}, failing: "timer"}
	if f := checkFollowing(early, Step{Op: opEdit}); f == nil || f.Check != "timer" || early.observ != 0 {
		t.Errorf("no timer before the deadline: %v (record read %d times), want the timer's failure", f, early.observ)
	}
}

// stayingChecker's record still says pending.
type stayingChecker struct{ *fakeChecker }

func (c *stayingChecker) observeEnd() *Failure { c.observ++; return nil }
