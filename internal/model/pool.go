package model

// Pool is an IPAM pool of the configuration, with every default filled in.
type Pool struct {
	PoolSpec
	Origin string // desired: file:line:col
}

// PoolAddress is an address a link takes from a pool: the engine allocates it (one per family of
// the pool) and turns it into Addresses before the diff.
type PoolAddress struct {
	Link string
	Pool string
	// IPv4Bits and IPv6Bits are the prefix lengths the allocated addresses get.
	IPv4Bits, IPv6Bits int
	Scope              int
	NoPrefixRoute      bool
	Origin             string
}

// IPAMPools returns the state's pools as the ipam package takes them, each reserving the
// addresses the state declares statically inside its subnets: a pool never hands out an address
// the file gives a link itself.
func (s *State) IPAMPools() []PoolSpec {
	out := make([]PoolSpec, len(s.Pools))
	for i, p := range s.Pools {
		out[i] = p.PoolSpec
		out[i].Reserved = nil
		for _, a := range s.Addresses {
			ip := a.Prefix.Addr()
			for _, sn := range p.Subnets {
				if sn.IPv4.Contains(ip) || sn.IPv6.Contains(ip) {
					out[i].Reserved = append(out[i].Reserved, ip)
					break
				}
			}
		}
	}
	return out
}
