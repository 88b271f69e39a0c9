package walk

// Why a key cannot have an event, by class.
const (
	exRequired = "required: the object does not load without it, so it leaves only with its object"
	exIdentity = "part of the item's identity: another value is another item (a removal and an addition)"
	exBool     = "a boolean the file writes only when true (false is the default): its change is a set or a removal"
	exMapMerge = "refused: nft 1.0.6, the version tested, takes auto-merge in no map (syntax error, unexpected auto-merge), and validate reports it at the map"
	exMapFrom  = "refused: elements-from feeds a set of type ipv4_addr or ipv6_addr with flags [interval] only, never a map"
)

// fixedFeed is why make test's fixed host walk does not prove the
// comparison of a set's feed from WireGuard peers.
const fixedFeed = "make test's fixed host walk (this generator's draws) holds a set fed by peers in one stretch of steps, in which the mutant's elements are the kernel's or its table is left out for a conflict: on this kernel no peer shakes hands (wireguard-go), so a feed of the up peers adds nothing, and the feeding link's peers there add no IPv4 element; proveOracle proves it wherever a peer's element is in the set (the generator feeds sets of the inet table by all peers mostly)"

// reachExceptions are the events of a key ("KEY EVENT", EVENT one of
// reachEvents) that the walk does not make, and why: the kernel or the
// schema rules them out, or the generator does not make them yet (said
// so). TestSchemaReach fails for an event the walk never makes that has
// no entry here, and for an entry the walk disproves.
var reachExceptions = map[string]string{
	"version changed":                                      "one version exists",
	"version removed":                                      exRequired,
	"settings.protocol changed":                            "drawn once a walk: changing it disowns every route and rule of the old protocol (docs/config.md), which the foreign check then counts as someone else's",
	"fou[].family removed":                                 exIdentity + " (port, family; without it ipv4)",
	"fou[].port removed":                                   exRequired,
	"links.*.kind removed":                                 exRequired,
	"links.*.veth.peer removed":                            exRequired,
	"links.*.ipvlan.parent removed":                        exRequired,
	"links.*.macvlan.parent removed":                       exRequired,
	"links.*.vlan.parent removed":                          exRequired,
	"links.*.vlan.id removed":                              exRequired,
	"links.*.vrf.table removed":                            exRequired,
	"links.*.ipip.mode changed":                            "ipip has one mode",
	"links.*.wireguard.peers[].keep-preshared-key changed": exBool,
	"links.*.wireguard.peers[].public-key removed":         exRequired,
	"nftables.*.sets.*.counter changed":                    exBool,
	"nftables.*.sets.*.auto-merge changed":                 exBool,
	"nftables.*.maps.*.counter changed":                    exBool,
	"nftables.*.maps.*.auto-merge set":                     exMapMerge,
	"nftables.*.maps.*.auto-merge changed":                 exMapMerge,
	"nftables.*.maps.*.auto-merge removed":                 exMapMerge,
	"nftables.*.maps.*.auto-merge shown":                   exMapMerge,
	"nftables.*.maps.*.elements-from.wireguard set":        exMapFrom,
	"nftables.*.maps.*.elements-from.wireguard changed":    exMapFrom,
	"nftables.*.maps.*.elements-from.wireguard removed":    exMapFrom,
	"nftables.*.maps.*.elements-from.wireguard shown":      exMapFrom,
	"nftables.*.maps.*.elements-from.peers set":            exMapFrom,
	"nftables.*.maps.*.elements-from.peers changed":        exMapFrom,
	"nftables.*.maps.*.elements-from.peers removed":        exMapFrom,
	"nftables.*.maps.*.elements-from.peers shown":          exMapFrom,
	"pools.*.subnets[].ipv4 removed":                       "a subnets entry is its ipv4 or its ipv6: the key leaves with its entry",
	"pools.*.subnets[].ipv6 removed":                       "a subnets entry is its ipv4 or its ipv6: the key leaves with its entry",
	"routes-files[].file removed":                          exRequired,
	"routes[].to removed":                                  exRequired,
	"routes[].nexthops[].via removed":                      exRequired,
	"rules[].priority removed":                             exRequired,

	// What show does not print, and why.
	"settings.max-disruption shown":                      "the service's limit on what a pass applies by itself, not kernel state: no kernel holds it for show to read (the walk's service pass keeps it, heldPass)",
	"links.*.adopt shown":                                "an instruction to take a foreign link over: adopted, the link is ours and shown as any other",
	"nftables.*.adopt shown":                             "an instruction to take a foreign table over: adopted, the table is ours and shown as any other",
	"links.*.wireguard.private-key-file shown":           "the kernel gives a key back, never its file: show prints public-key (the device keeps the key it holds)",
	"links.*.wireguard.private-key-credential shown":     "the kernel gives a key back, never its credential: show prints public-key (the device keeps the key it holds)",
	"links.*.wireguard.peers[].preshared-key-file shown": "the kernel gives a key back, never its file (and show prints no secret): show prints keep-preshared-key",
	"links.*.wireguard.rotation.connect-timeout shown":   "the daemon's timing of endpoint rotation, not kernel state",
	"links.*.wireguard.rotation.down-after shown":        "the daemon's timing of endpoint rotation, not kernel state",
	"links.*.wireguard.rotation.interval shown":          "the daemon's timing of endpoint rotation, not kernel state",
	"routes-files[].file shown":                          "the kernel holds routes, not the file they came from: show prints them under routes",
	"routes-files[].table shown":                         "the kernel holds routes, not the file they came from: show prints each with its table under routes",
	"nftables.*.sets.*.elements-file shown":              "the kernel holds elements, not the file they came from: show prints them under elements",
	"nftables.*.maps.*.elements-file shown":              "the kernel holds elements, not the file they came from: show prints them under elements",
	"nftables.*.sets.*.elements-from.peers shown":        "the kernel holds the elements, not what fed them: show prints them under elements",
	"nftables.*.sets.*.elements-from.wireguard shown":    "the kernel holds the elements, not what fed them: show prints them under elements",

	// Comparisons the fixed walk does not prove.
	"nftables.*.sets.*.elements-from.peers proven":     fixedFeed,
	"nftables.*.sets.*.elements-from.wireguard proven": fixedFeed,
	"nftables.*.chains.*.type proven":                  "the mutant's other type (route, nat) is refused by nft for most of the walk's base chains (families and hooks), so the oracle, which compiles rules with nft, cannot compare it; a chain's type is compared where the mutant is one nft takes",
}

// reachEvents are what the walk does to a key: the generator sets,
// changes, removes it; show prints it; proveOracle proves its comparison.
var reachEvents = []string{"set", "changed", "removed", "shown", "proven"}

// notYetWalked are keys that came to the schema after the walk's reach was
// made a test (the nftables rewrite: sets, maps and objects nft declares),
// with the reason the walk does not cover
// them yet. TestSchemaReach takes them as excepted from every event and
// from the oracle's table; a key here that the walk covers fails it.
var notYetWalked = map[string]string{}

func init() {
	for k, reason := range notYetWalked {
		if _, ok := oracleChecks[k]; !ok {
			if _, ok := oracleExceptions[k]; !ok {
				oracleExceptions[k] = "not yet walked: " + reason
			}
		}
		for _, ev := range reachEvents {
			if _, ok := reachExceptions[k+" "+ev]; !ok {
				reachExceptions[k+" "+ev] = "not yet walked: " + reason
			}
		}
	}
}
