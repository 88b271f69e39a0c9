package kernel

import "github.com/netreconcile/netreconcile/internal/model"

// Routes lists the routes of every table (the local table included), of one
// protocol when protocol is not 0.
func (k *Netlink) Routes(protocol int) ([]model.Route, error) {
	var out []model.Route
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(protocol, 0, make([]model.Route, 0, k.routeHint.Load()))
		return err
	})
	if err != nil {
		return nil, err
	}
	k.routeHint.Store(int64(len(out)))
	model.SortRoutes(out)
	return out, nil
}

// TableRoutes lists the routes of one table, of one protocol (0: every
// protocol). The kernel walks that table only.
func (k *Netlink) TableRoutes(table, protocol int) ([]model.Route, error) {
	var out []model.Route
	err := retry("routes", func() error {
		var err error
		out, _, err = k.dumpRoutes(protocol, table, nil)
		return err
	})
	if err != nil {
		return nil, err
	}
	// A kernel without strict checking sends every table and protocol:
	// keep what was asked.
	n := 0
	for _, r := range out {
		if r.Table == table && (protocol == 0 || r.Protocol == protocol) {
			out[n] = r
			n++
		}
	}
	out = out[:n]
	model.SortRoutes(out)
	return out, nil
}
