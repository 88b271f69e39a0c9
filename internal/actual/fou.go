package actual

import (
	"errors"
	"fmt"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// readFou lists the open FoU ports, unless opt.SkipFou; the ledger says
// which are ours, since the kernel has nowhere to mark one.
func readFou(k kernel.Reader, st *model.State, opt Options) error {
	if opt.SkipFou && len(opt.OwnedFou) == 0 {
		return nil
	}
	owned := opt.OwnedFou
	var err error
	st.FouPorts, err = k.FouPorts()
	if errors.Is(err, kernel.ErrUnsupported) {
		// No FoU in this kernel: nothing can be open. A file that declares
		// ports gets its error when the apply tries to open them.
		st.FouPorts, err = nil, nil
	}
	if err != nil {
		return fmt.Errorf("read fou ports: %w", err)
	}
	for i := range st.FouPorts {
		st.FouPorts[i].Owned = owned[st.FouPorts[i].Key()]
	}
	return nil
}
