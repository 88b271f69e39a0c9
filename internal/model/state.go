package model

// DefaultProtocol is the route and rule protocol number netreconcile stamps on
// what it creates. It is unassigned in iproute2's rt_protos and in the IANA-like
// list distributions ship (0-4 kernel, 8-19 classic daemons, 42 babel, 99
// openr, 186-192 routing suites), so a foreign daemon is unlikely to use it.
const DefaultProtocol = 245

// State is one host's network state, desired or actual.
type State struct {
	// Protocol is the ownership marker for routes and rules.
	Protocol int
	Links    map[string]*Link
	// Addresses, routes, rules and FoU ports are kept sorted by Key.
	Addresses []Address
	Routes    []Route
	Rules     []Rule
	FouPorts  []FouPort
	// NFTables are the nftables tables netreconcile owns, sorted by key.
	NFTables []NftTable
	// Pools are the IPAM pools of the configuration, sorted by name, and PoolAddresses the
	// addresses links take from them (desired only; see pool.go).
	Pools         []Pool
	PoolAddresses []PoolAddress
}

// NewState returns an empty state with the default protocol.
func NewState() *State {
	return &State{Protocol: DefaultProtocol, Links: map[string]*Link{}}
}
