package actual

import (
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// readAddresses lists the addresses; those of a link we own are ours.
func readAddresses(k kernel.Reader, st *model.State) error {
	var err error
	if st.Addresses, err = k.Addresses(); err != nil {
		return err
	}
	st.AddressProtocols = k.AddressProtocols()
	for i := range st.Addresses {
		a := &st.Addresses[i]
		if a.Protocol != 0 {
			st.AddressProtocols = true
		}
		if l, ok := st.Links[a.Link]; ok && l.Owned {
			a.Owned = true
		}
	}
	return nil
}
