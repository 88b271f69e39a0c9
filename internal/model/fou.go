package model

import (
	"fmt"
	"sort"
)

// FouPort is a Foo-over-UDP receive port (`ip fou add port P ipproto N [-6]`).
// The kernel keeps no owner for it, so ownership of FoU ports is recorded by
// the apply stage in the ownership ledger (see package ledger).
type FouPort struct {
	Port    uint16
	IPv6    bool
	IPProto uint8 // 4 (ipip) or 41 (ipv6); 0 with GUE
	GUE     bool

	Owned  bool
	Origin string
}

// FouKey identifies a FoU port: the kernel allows one listener per family and port.
type FouKey struct {
	Port uint16
	IPv6 bool
}

// Key returns the port's identity.
func (f *FouPort) Key() FouKey { return FouKey{f.Port, f.IPv6} }

func (k FouKey) String() string {
	if k.IPv6 {
		return fmt.Sprintf("fou port %d -6", k.Port)
	}
	return fmt.Sprintf("fou port %d", k.Port)
}

// String renders the port as `ip fou add` arguments.
func (f *FouPort) String() string {
	s := fmt.Sprintf("port %d", f.Port)
	if f.GUE {
		s += " gue"
	} else {
		s += fmt.Sprintf(" ipproto %d", f.IPProto)
	}
	if f.IPv6 {
		s += " -6"
	}
	return s
}

// SortFou orders FoU ports by family then port.
func SortFou(fs []FouPort) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].IPv6 != fs[j].IPv6 {
			return !fs[i].IPv6
		}
		return fs[i].Port < fs[j].Port
	})
}
