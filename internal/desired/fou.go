package desired

import (
	"strconv"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The schema of this kind (see conf.go): what the file holds, before the
// builder below checks it.

type fouConf struct {
	Meta
	Port    uint16  `yaml:"port" schema:"required,limits=udpPort"`
	IPProto uint8   `yaml:"ipproto"`
	GUE     bool    `yaml:"gue"`
	Family  *Family `yaml:"family"`
}

func (b *builder) fou(i int, fc *fouConf) {
	// The path is only built for an error, as for routes.
	path := func() string { return "fou[" + strconv.Itoa(i) + "]" }
	f := model.FouPort{Port: fc.Port, IPProto: fc.IPProto, GUE: fc.GUE, Origin: fc.Pos.String()}
	if fc.Port == 0 {
		b.errs.add(fc.at("port"), path()+".port", "missing; expected the UDP port to receive on (1-65535)")
		return
	}
	if fc.Family != nil {
		if fc.Family.V4 && fc.Family.V6 {
			b.errs.add(fc.at("family"), path()+".family", "a FoU port is per family: expected ipv4 or ipv6 (declare two ports for both)")
			return
		}
		f.IPv6 = fc.Family.V6
	}
	switch {
	case fc.GUE && fc.has("ipproto"):
		b.errs.add(fc.at("ipproto"), path()+".ipproto", "a GUE port carries the protocol in its header; remove ipproto")
	case !fc.GUE && fc.IPProto != 4 && fc.IPProto != 41:
		b.errs.add(fc.at("ipproto"), path()+".ipproto", "expected 4 (ipip) or 41 (ip6ip6 / ipv6), found %d", fc.IPProto)
	}
	if wg, taken := b.wgPortAt[int(fc.Port)]; taken {
		// WireGuard binds its port in both families: the FoU port's
		// socket met EADDRINUSE at apply.
		b.errs.add(fc.at("port"), path()+".port", "UDP port %d is WireGuard device %s's listen-port (set at %s): the kernel binds a port once per namespace; give one of them another", fc.Port, wg.link, wg.pos)
		return
	}
	if prev, dup := b.fouAt[f.Key()]; dup {
		b.errs.add(fc.Pos, path(), "%s is declared twice (first at %s)", f.Key(), prev)
		return
	}
	b.fouAt[f.Key()] = fc.Pos
	b.st.FouPorts = append(b.st.FouPorts, f)
}
