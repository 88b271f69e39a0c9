package cli

import "github.com/netreconcile/netreconcile/internal/model"

const defaultProtocol = model.DefaultProtocol

// owned keeps what netreconcile owns: marked links and their addresses, routes
// and rules of our protocol, FoU ports in the ledger.
func owned(st *model.State) *model.State {
	out := model.NewState()
	out.Protocol = st.Protocol
	for n, l := range st.Links {
		if l.Owned {
			out.Links[n] = l
		}
	}
	for _, a := range st.Addresses {
		// IPv6 link-local addresses are made by the kernel on every link.
		if a.Owned && !(a.Prefix.Addr().Is6() && a.Prefix.Addr().IsLinkLocalUnicast()) {
			out.Addresses = append(out.Addresses, a)
		}
	}
	for _, r := range st.Routes {
		if r.Protocol == st.Protocol {
			out.Routes = append(out.Routes, r)
		}
	}
	for _, r := range st.Rules {
		if r.Protocol == st.Protocol {
			out.Rules = append(out.Rules, r)
		}
	}
	for _, t := range st.NFTables {
		if t.Owned {
			out.NFTables = append(out.NFTables, t)
		}
	}
	for _, f := range st.FouPorts {
		if f.Owned {
			out.FouPorts = append(out.FouPorts, f)
		}
	}
	return out
}
