package desired

// The conf types are the file's schema, one struct per YAML mapping. They hold
// what the user wrote; the builder (build.go) checks them and turns them into
// model types. docs/config.md
// documents every key here: keep the two in step.

// CurrentVersion is the only schema version this build reads.
const CurrentVersion = 1

type fileConf struct {
	Meta
	Version  int                      `yaml:"version"`
	Settings *settingsConf            `yaml:"settings"`
	Links    map[string]*linkConf     `yaml:"links"`
	Fou      []*fouConf               `yaml:"fou"`
	Routes   []*routeConf             `yaml:"routes"`
	Rules    []*ruleConf              `yaml:"rules"`
	NFTables map[string]*nftTableConf `yaml:"nftables"`
	Pools    map[string]*poolConf     `yaml:"pools"`
}

type settingsConf struct {
	Meta
	Protocol int `yaml:"protocol"`
	// ProtocolOverride accepts a protocol number that the kernel or
	// iproute2 names (see protocol.go).
	ProtocolOverride bool `yaml:"protocol-override"`
}

type linkConf struct {
	Meta
	Kind      string         `yaml:"kind"`
	MTU       int            `yaml:"mtu"`
	State     string         `yaml:"state"`
	Master    string         `yaml:"master"`
	Alias     string         `yaml:"alias"`
	Adopt     bool           `yaml:"adopt"`
	Addresses []*addressConf `yaml:"addresses"`

	Veth      *vethConf      `yaml:"veth"`
	VXLAN     *vxlanConf     `yaml:"vxlan"`
	IPVlan    *ipvlanConf    `yaml:"ipvlan"`
	IPIP      *tunnelConf    `yaml:"ipip"`
	IP6Tnl    *tunnelConf    `yaml:"ip6tnl"`
	WireGuard *wireguardConf `yaml:"wireguard"`
}

type vethConf struct {
	Meta
	Peer      string `yaml:"peer"`
	PeerNetNS string `yaml:"peer-netns"`
}

type vxlanConf struct {
	Meta
	ID       uint32 `yaml:"id"`
	Local    *Addr  `yaml:"local"`
	Remote   *Addr  `yaml:"remote"`
	Group    *Addr  `yaml:"group"`
	Port     uint16 `yaml:"port"`
	Dev      string `yaml:"dev"`
	TTL      uint8  `yaml:"ttl"`
	Learning *bool  `yaml:"learning"`
}

type ipvlanConf struct {
	Meta
	Parent string `yaml:"parent"`
	Mode   string `yaml:"mode"`
}

type tunnelConf struct {
	Meta
	Mode     string     `yaml:"mode"`
	Local    *Addr      `yaml:"local"`
	Remote   *Addr      `yaml:"remote"`
	TTL      *uint8     `yaml:"ttl"`
	External bool       `yaml:"external"`
	Encap    *encapConf `yaml:"encap"`
}

type encapConf struct {
	Meta
	Type  string `yaml:"type"`
	Sport *Sport `yaml:"sport"`
	Dport uint16 `yaml:"dport"`
}

type fouConf struct {
	Meta
	Port    uint16  `yaml:"port"`
	IPProto uint8   `yaml:"ipproto"`
	GUE     bool    `yaml:"gue"`
	Family  *Family `yaml:"family"`
}

type routeConf struct {
	Meta
	To     *Prefix `yaml:"to"`
	Family *Family `yaml:"family"`
	Via    *Addr   `yaml:"via"`
	Dev    string  `yaml:"dev"`
	Src    *Addr   `yaml:"src"`
	Table  *Table  `yaml:"table"`
	Metric int     `yaml:"metric"`
	TOS    uint8   `yaml:"tos"`
	Scope  *Scope  `yaml:"scope"`
	OnLink bool    `yaml:"onlink"`
	MTU    int     `yaml:"mtu"`
	Type   string  `yaml:"type"`
}

type ruleConf struct {
	Meta
	Priority          *int    `yaml:"priority"`
	Family            *Family `yaml:"family"`
	From              *Prefix `yaml:"from"`
	To                *Prefix `yaml:"to"`
	FwMark            *Mark   `yaml:"fwmark"`
	IIF               string  `yaml:"iif"`
	OIF               string  `yaml:"oif"`
	Not               bool    `yaml:"not"`
	Action            string  `yaml:"action"`
	Table             *Table  `yaml:"table"`
	SuppressPrefixLen *int    `yaml:"suppress-prefixlength"`
}
