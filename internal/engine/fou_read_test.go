package engine

import (
	"errors"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/ledger"
	"github.com/netreconcile/netreconcile/internal/model"
)

// A plan lists the FoU ports only when the file declares some or the
// ledger owns some: otherwise nothing in it looks at them, and the listing
// (a generic netlink family lookup on a socket of its own, then the dump)
// was a share of a one-shot apply's CPU. show still lists them.
func TestPlanReadsFouOnlyWhenItMatters(t *testing.T) {
	k := kerneltest.New()
	led, _ := ledger.OpenIn(nil, 0)
	e := &Engine{Kernel: k, Ledger: led}
	listed := errors.New("fou ports listed")
	k.FailAlways(kerneltest.CallFouPorts, listed)

	st := model.NewState()
	if _, err := e.Plan(st); err != nil {
		t.Fatalf("a plan without FoU ports listed them: %v", err)
	}
	withFou := model.NewState()
	withFou.FouPorts = []model.FouPort{{Port: 5555, IPProto: 4}}
	if _, err := e.Plan(withFou); !errors.Is(err, listed) {
		t.Fatalf("a plan of a file with a FoU port did not list them: %v", err)
	}
	led.SetFou(model.FouKey{Port: 5555}, true)
	if _, err := e.Plan(st); !errors.Is(err, listed) {
		t.Fatalf("a plan with a FoU port owned did not list them: %v", err)
	}
	led.SetFou(model.FouKey{Port: 5555}, false)
	if _, err := e.Actual(0, false); !errors.Is(err, listed) {
		t.Fatalf("show did not list the FoU ports: %v", err)
	}
}
