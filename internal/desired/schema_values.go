package desired

import (
	"math"
	"sort"

	"github.com/netreconcile/netreconcile/internal/model"
)

// What each type that parses itself accepts, as JSON Schema (schema.go):
// each method follows the parser it names. The patterns are RE2 and
// ECMAScript alike (Go and editors read them); where one is looser than
// its parser (an IPv6 address, a port's range inside a text), the loader
// says the rest.

const (
	ipv4Pattern   = `(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])(\.(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])){3}`
	ipv6Pattern   = `[0-9a-fA-F]{0,4}(:[0-9a-fA-F]{0,4}){2,7}|[0-9a-fA-F]{0,4}(:[0-9a-fA-F]{0,4}){2,6}:` + ipv4Pattern
	ipv4LenSuffix = `/(3[0-2]|[12]?[0-9])`
	ipv6LenSuffix = `/(12[0-8]|1[01][0-9]|[1-9]?[0-9])`
	// uintText is an unsigned integer as strconv.ParseUint reads it with
	// base 0.
	uintText = `(0[xX](_?[0-9a-fA-F])+|0[bB](_?[01])+|0[oO](_?[0-7])+|0(_?[0-7])*|[1-9](_?[0-9])*)`
)

func cidrPattern(extra string) string {
	return `^(` + extra + ipv4Pattern + ipv4LenSuffix + `|(` + ipv6Pattern + `)` + ipv6LenSuffix + `)$`
}

// Prefix.parse: a CIDR prefix (host bits zero, which the schema does not
// check), or default / all.
func (*Prefix) jsonSchema(string) (string, map[string]any) {
	return "prefix", map[string]any{
		"description": "A CIDR prefix with its length (10.0.0.0/24, fd00::/64), host bits zero; or default (all is the same).",
		"type":        "string",
		"pattern":     cidrPattern(`default|all|`),
	}
}

// IfAddr.parse: an address with its prefix length.
func (*IfAddr) jsonSchema(string) (string, map[string]any) {
	return "interface-address", map[string]any{
		"description": "An address with its prefix length: 10.0.0.1/24, fd00::1/64.",
		"type":        "string",
		"pattern":     cidrPattern(""),
	}
}

// Addr.parse: one address, no zone.
func (*Addr) jsonSchema(string) (string, map[string]any) {
	return "address", map[string]any{
		"description": "An IP address: 192.0.2.1, 2001:db8::1.",
		"type":        "string",
		"pattern":     `^(` + ipv4Pattern + `|` + ipv6Pattern + `)$`,
	}
}

// Mark.parse: a 32-bit value, optionally /mask, each in strconv's bases.
func (*Mark) jsonSchema(string) (string, map[string]any) {
	return "mark", map[string]any{
		"description": "A firewall mark: 0x40, or 0x40/0x60 with a mask (32-bit numbers, hex or decimal).",
		"anyOf": []any{
			map[string]any{"type": "integer", "minimum": 0, "maximum": math.MaxUint32},
			map[string]any{"type": "string", "pattern": `^\s*` + uintText + `\s*(/\s*` + uintText + `\s*)?$`},
		},
	}
}

// Table.parse: a number from 1 or a name of model.TableNames.
func (*Table) jsonSchema(string) (string, map[string]any) {
	return "table", map[string]any{
		"description": "A routing table: 1 to 4294967295, or main, local, default.",
		"anyOf": []any{
			map[string]any{"enum": sortedKeys(model.TableNames)},
			map[string]any{"type": "integer", "minimum": 1, "maximum": math.MaxUint32},
			map[string]any{"type": "string", "pattern": `^` + uintText + `$`},
		},
	}
}

// Duration.parse: whole days, then time.ParseDuration, not negative.
func (*Duration) jsonSchema(string) (string, map[string]any) {
	return "duration", map[string]any{
		"description": "A duration: 30s, 5m, 1h30m, 250ms, 2d12h.",
		"anyOf": []any{
			map[string]any{"type": "string", "pattern": `^[0-9]+d(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))*)$`},
			map[string]any{"type": "string", "pattern": `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`},
			map[string]any{"type": "integer", "enum": []any{0}},
		},
	}
}

// Sport.parse: a UDP port from 1, or auto.
func (*Sport) jsonSchema(string) (string, map[string]any) {
	return "source-port", map[string]any{
		"description": "A UDP source port from 1 to 65535, or auto.",
		"anyOf": []any{
			map[string]any{"enum": []any{"auto"}},
			map[string]any{"type": "integer", "minimum": 1, "maximum": math.MaxUint16},
			map[string]any{"type": "string", "pattern": `^` + uintText + `$`},
		},
	}
}

// Scope.parse: a name of model.ScopeNames.
func (*Scope) jsonSchema(string) (string, map[string]any) {
	var words []string
	for w := range model.ScopeNames {
		if w != "universe" { // global's other name, left out of completion
			words = append(words, w)
		}
	}
	sort.Strings(words)
	return "scope", map[string]any{
		"description": "A scope: global, site, link, host, nowhere.",
		"anyOf": []any{
			map[string]any{"enum": words},
			map[string]any{"type": "string", "pattern": "^universe$"},
		},
	}
}

// Family.parse: ipv4, ipv6 or both, and their other names.
func (*Family) jsonSchema(string) (string, map[string]any) {
	return "family", map[string]any{
		"description": "An address family: ipv4, ipv6 or both.",
		"anyOf": []any{
			map[string]any{"enum": []any{"ipv4", "ipv6", "both"}},
			map[string]any{"type": "string", "pattern": "^(inet|inet6|all|4|6)$"},
			map[string]any{"type": "integer", "enum": []any{4, 6}},
		},
	}
}

// checkEndpoint: HOST:PORT, an IPv6 address in brackets, a name without
// spaces, slashes or colons; the port from 1.
func (*wgEndpoint) jsonSchema(string) (string, map[string]any) {
	return "endpoint", map[string]any{
		"description": "ADDRESS:PORT: 192.0.2.1:51820, [2001:db8::1]:51820, node1.example.com:51820.",
		"type":        "string",
		"pattern":     `^(\[[^\]]+\]|[^\s:/%\[\]]+):0*[1-9][0-9]{0,4}$`,
	}
}

// posText.decodeNode: any scalar, as its text (a rule, an element, a
// chain's priority).
func (*posText) jsonSchema(string) (string, map[string]any) {
	return "string", map[string]any{
		"description": "Any scalar, read as its text.",
		"type":        []string{"string", "number", "boolean"},
	}
}

// sysctlsConf.decodeNode: keys to values as the kernel prints them: a
// decimal integer or a string. Under a link the keys are the link's own
// (ipv4.NAME, ipv6.NAME, ipv4.neigh.NAME), at the top under net.
func (*sysctlsConf) jsonSchema(path string) (string, map[string]any) {
	keys := `^net(\.[A-Za-z0-9_/:@+-]+)+$`
	if path != "sysctls" {
		keys = `^ipv[46](\.neigh)?\.[A-Za-z0-9_/:@+-]+(\.[A-Za-z0-9_/:@+-]+)*$`
	}
	return "", map[string]any{
		"type":          "object",
		"propertyNames": map[string]any{"pattern": keys},
		"additionalProperties": map[string]any{
			"description": "The value as the kernel prints it: a decimal number or a string (\"32768 60999\"); not a YAML boolean.",
			"type":        []string{"integer", "string"},
		},
	}
}

// blockRanges.decodeNode: a block index, a range "FIRST-LAST", or a list
// of those.
func (*blockRanges) jsonSchema(string) (string, map[string]any) {
	one := map[string]any{"anyOf": []any{
		map[string]any{"type": "integer", "minimum": 0},
		map[string]any{"type": "string", "pattern": `^\s*[0-9]+\s*(-\s*[0-9]+\s*)?$`},
	}}
	return "block-ranges", map[string]any{
		"description": "Block indexes: 7, \"0-15\", or a list of those.",
		"anyOf":       []any{one, map[string]any{"type": "array", "items": one}},
	}
}

// addressConf.decodeNode: the shorthand is an interface address.
func (*addressConf) shorthand() map[string]any {
	return map[string]any{"$ref": "#/definitions/interface-address"}
}

// The mapping form gives an address or takes one from a pool.
func (*addressConf) refineSchema(obj map[string]any) {
	obj["anyOf"] = []any{
		map[string]any{"required": []string{"address"}},
		map[string]any{"required": []string{"pool"}},
	}
}

// subnetConf.decodeNode: the shorthand is a prefix (not default).
func (*subnetConf) shorthand() map[string]any {
	return map[string]any{"type": "string", "pattern": cidrPattern("")}
}

// The mapping form gives one prefix of each family, or one of them.
func (*subnetConf) refineSchema(obj map[string]any) {
	obj["minProperties"] = 1
}

// given is a key whose value counts: the builder takes an empty string
// or null for a key left out.
func given(key string) map[string]any {
	return map[string]any{"required": []string{key}, "properties": map[string]any{key: map[string]any{"not": map[string]any{"enum": []any{nil, ""}}}}}
}

// truthy is what the decoder takes for true (strconv.ParseBool's words,
// as YAML gives them to a schema).
var truthy = []any{true, 1, "t", "T"}

// A unicast or local route needs via, dev or next hops, another type none
// of them; next hops go without via, dev and onlink, on a unicast route;
// onlink needs via and dev (route.go).
func (*routeConf) refineSchema(obj map[string]any) {
	hops := map[string]any{"required": []string{"nexthops"}, "properties": map[string]any{"nexthops": map[string]any{"minItems": 1}}}
	path := []any{given("via"), given("dev"), hops}
	onlink := map[string]any{"required": []string{"onlink"}, "properties": map[string]any{"onlink": map[string]any{"enum": truthy}}}
	unicast := []any{model.RouteTypeName(model.RouteUnicast)}
	obj["allOf"] = []any{
		map[string]any{
			"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"enum": []any{model.RouteTypeName(model.RouteUnicast), model.RouteTypeName(model.RouteLocal)}}}},
			"then": map[string]any{"anyOf": path},
			"else": map[string]any{"not": map[string]any{"anyOf": path}},
		},
		map[string]any{
			"if":   hops,
			"then": map[string]any{"not": map[string]any{"anyOf": []any{given("via"), given("dev"), onlink}}, "properties": map[string]any{"type": map[string]any{"enum": unicast}}},
			"else": map[string]any{"if": onlink, "then": map[string]any{"allOf": []any{given("via"), given("dev")}}},
		},
	}
}

// A lookup rule (the default action) needs a table, another action takes
// none (rule.go).
func (*ruleConf) refineSchema(obj map[string]any) {
	var lookup string
	for w, a := range model.RuleActionNames {
		if a == model.RuleLookup {
			lookup = w
		}
	}
	obj["if"] = map[string]any{"properties": map[string]any{"action": map[string]any{"enum": []any{lookup}}}}
	obj["then"] = given("table")
	obj["else"] = map[string]any{"not": given("table")}
}

// A chain with a type, priority, policy or device is a base chain, which
// needs a hook, and a hook needs a priority (nft.go).
func (*nftChainConf) refineSchema(obj map[string]any) {
	obj["dependencies"] = map[string]any{
		"type": []string{"hook"}, "priority": []string{"hook"}, "policy": []string{"hook"}, "device": []string{"hook"}, "hook": []string{"priority"},
	}
}

// A WireGuard device takes its private key from a file or a credential,
// one of the two, or keeps the key it holds: public-key alone
// (wireguard.go).
func (*wireguardConf) refineSchema(obj map[string]any) {
	obj["anyOf"] = []any{given("private-key-file"), given("private-key-credential"), given("public-key")}
	obj["not"] = map[string]any{"allOf": []any{given("private-key-file"), given("private-key-credential")}}
}

// routesFileConf.decodeNode: the shorthand is the file's path.
func (*routesFileConf) shorthand() map[string]any {
	return map[string]any{"$ref": "#/definitions/string"}
}
