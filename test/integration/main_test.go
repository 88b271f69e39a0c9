package integration

import (
	"os"
	"testing"
)

// TestMain: the tests run the command line in-process (nettest.CLI), so an
// apply with --confirm-within starts its rollback timer as this program,
// "integration.test rollback --due ID". Started so, it exits at once: run
// as the tests instead, it started every test again, each apply of theirs a
// timer of its own, without end; run as the command, it would write to a
// state directory the test is removing. No test here waits for a deadline
// (they confirm, or a probe rolls back at once); the timers are tested with
// the built program (internal/safeapply, test/e2e).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "rollback" {
		os.Exit(0)
	}
	os.Exit(m.Run())
}
