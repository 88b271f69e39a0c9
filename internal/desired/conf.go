package desired

// The conf types are the file's schema, one struct per YAML mapping. They hold
// what the user wrote; the builder (build.go) checks them and turns them into
// model types. The top of the file is here; each kind's structs stand beside
// its builder (link.go, address_conf.go, fou.go, route.go, rule.go, nft.go,
// pool.go, wireguard.go, sysctl.go). docs/config.md documents every key: keep the two in
// step.

// CurrentVersion is the only schema version this build reads.
const CurrentVersion = 1

type fileConf struct {
	Meta
	Version  int                  `yaml:"version" schema:"required,limits=version"`
	Settings *settingsConf        `yaml:"settings"`
	Links    map[string]*linkConf `yaml:"links"`
	Fou      []*fouConf           `yaml:"fou" schema:"unique"`
	Routes   []*routeConf         `yaml:"routes" schema:"unique"`
	// RoutesFiles are side files of routes (route_file.go).
	RoutesFiles []*routesFileConf        `yaml:"routes-files"`
	Rules       []*ruleConf              `yaml:"rules" schema:"unique"`
	NFTables    map[string]*nftTableConf `yaml:"nftables"`
	Pools       map[string]*poolConf     `yaml:"pools"`
	Sysctls     *sysctlsConf             `yaml:"sysctls"`
}

type settingsConf struct {
	Meta
	Protocol int `yaml:"protocol" schema:"limits=protocol"`
	// ProtocolOverride accepts a protocol number that the kernel or
	// iproute2 names (see protocol.go).
	ProtocolOverride bool `yaml:"protocol-override"`
	// MaxDisruption is the most disruptive change the service applies by
	// itself (model.DisruptionNames); others wait for an apply by hand.
	MaxDisruption string `yaml:"max-disruption"`
}
