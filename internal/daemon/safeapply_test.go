package daemon

import (
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// The daemon's part in safe apply: the configuration it converged is
// handed over once per change, with the content that pass enforced, and
// STATUS= carries what the transaction source says.
func TestConvergedAndStatusExtra(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	var got [][]desired.Source
	e.d.opts.Converged = func(srcs []desired.Source) error {
		got = append(got, srcs)
		return nil
	}
	e.d.opts.StatusExtra = func(now time.Time) string { return "transaction T pending" }
	e.start()
	if len(got) != 1 || len(got[0]) != 1 || string(got[0][0].Data) != twoBridges {
		t.Fatalf("after the first converged pass: %d calls %v", len(got), got)
	}
	if s := e.notes.lastStatus(); !strings.HasSuffix(s, "; transaction T pending") {
		t.Errorf("STATUS= %q", s)
	}
	// A pass of the same configuration (drift, a resync) hands nothing.
	e.wake()
	e.run(time.Second)
	if len(got) != 1 {
		t.Errorf("an unchanged configuration handed over again: %d calls", len(got))
	}
	one := "version: 1\nlinks:\n  br0: {kind: bridge}\n"
	e.write(one)
	e.wake()
	e.run(time.Second)
	if len(got) != 2 || string(got[1][0].Data) != one {
		t.Errorf("after a change: %d calls", len(got))
	}
}

// A configuration pinned by a rollback that could not write the files back
// is enforced instead of the files, until the files change.
func TestPinnedConfiguration(t *testing.T) {
	e := newLoopEnv(t, twoBridges)
	one := "version: 1\nlinks:\n  br0: {kind: bridge}\n"
	rejected := twoBridges
	e.d.opts.Pin = func(srcs []desired.Source) ([]desired.Source, string, error) {
		if len(srcs) == 1 && string(srcs[0].Data) == rejected {
			return []desired.Source{{Name: srcs[0].Name, Data: []byte(one)}}, "T", nil
		}
		return srcs, "", nil
	}
	e.start()
	if !e.eng.kernel["br0"] || e.eng.kernel["br1"] {
		t.Fatalf("the pinned configuration is not the one enforced: %v", e.eng.kernel)
	}
	if !strings.Contains(e.log.String(), "transaction=T") {
		t.Errorf("the pin is not logged:\n%s", e.log.String())
	}
	e.write(twoBridges + "# edited\n")
	e.wake()
	e.run(time.Second)
	if !e.eng.kernel["br1"] {
		t.Errorf("an edit did not lift the pin: %v", e.eng.kernel)
	}
}
