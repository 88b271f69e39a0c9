package walk

import (
	"strings"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// Why a key cannot have an event, by class.
const (
	exRequired = "required: the object does not load without it, so it leaves only with its object"
	exIdentity = "part of the item's identity: another value is another item (a removal and an addition)"
	exBool     = "a boolean the file writes only when true (false is the default): its change is a set or a removal"
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
	"nftables.*.sets.*.type removed":                       exRequired,
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

// notYetWalkedNft are the keys of sets, maps and objects in nft's words.
var notYetWalkedNft = []string{"nftables.*.maps.", "nftables.*.objects", "nftables.*.sets.*.typeof", "nftables.*.sets.*.size", "nftables.*.sets.*.policy", "nftables.*.sets.*.counter", "nftables.*.sets.*.auto-merge", "nftables.*.sets.*.comment"}

func init() {
	for _, k := range desired.SchemaKeys() {
		for _, p := range notYetWalkedNft {
			if strings.HasPrefix(k, p) {
				notYetWalked[k] = "a set, map or object in nft's words (the nftables rewrite): not generated by the walk yet, nor compared by its oracle"
			}
		}
	}
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
