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
	checks, observ int
}

func (c *fakeChecker) checkOnce(Step) *Failure {
	c.checks++
	if c.txn != nil {
		return &Failure{Check: "kernel", Msg: "not the version edited in the window"}
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
// Transaction walk soak seeds 135496957163784 (root/proc-unnamed, step
// 10: edit v4 in place) and 125697354974570 (root/name, step 14).
func TestTxWalkFindingRollbackDuringALongCheck(t *testing.T) {
	for _, late := range []time.Duration{time.Second, convergeBound + time.Second} {
		c := &fakeChecker{txn: &txnModel{id: "t", deadline: time.Now().Add(-late)}}
		if f := checkFollowing(c, Step{Op: opEdit}); f != nil {
			t.Errorf("deadline %s ago: %v", late, f)
		}
		if c.observ != 1 || c.checks != 2 {
			t.Errorf("deadline %s ago: record read %d times, checks run %d times; want 1 and 2", late, c.observ, c.checks)
		}
	}
	// A failure with the transaction still pending past the bound stands.
	stays := &stayingChecker{&fakeChecker{txn: &txnModel{id: "t", deadline: time.Now().Add(-convergeBound)}}}
	if f := checkFollowing(stays, Step{Op: opEdit}); f == nil || f.Check != "kernel" {
		t.Errorf("a transaction pending past its bound: %v, want the kernel's failure", f)
	}
}

// stayingChecker's record still says pending.
type stayingChecker struct{ *fakeChecker }

func (c *stayingChecker) observeEnd() *Failure { c.observ++; return nil }
