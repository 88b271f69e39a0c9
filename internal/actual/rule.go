package actual

import (
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// readRules lists every rule, of every protocol: the diff tells ours by the
// protocol number, and sees a foreign rule in the way of one of the file's.
func readRules(k kernel.Reader, st *model.State) error {
	var err error
	st.Rules, err = k.Rules()
	return err
}
