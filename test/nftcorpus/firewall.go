package nftcorpus

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// A firewall is a whole netreconcile file of nftables tables, as operators
// write them (testdata/firewalls): FirewallScript renders it as the nft
// script an operator would load with nft -f, so that the two can be
// compared table by table (ReadTable).

type fwFile struct {
	NFTables yaml.Node `yaml:"nftables"`
}

type fwTable struct {
	Sets    yaml.Node            `yaml:"sets"`
	Maps    yaml.Node            `yaml:"maps"`
	Objects yaml.Node            `yaml:"objects"`
	Chains  yaml.Node            `yaml:"chains"`
	Rest    map[string]yaml.Node `yaml:",inline"`
}

type fwSet struct {
	Type      string   `yaml:"type"`
	Typeof    string   `yaml:"typeof"`
	Flags     []string `yaml:"flags"`
	Timeout   string   `yaml:"timeout"`
	Size      string   `yaml:"size"`
	Policy    string   `yaml:"policy"`
	Counter   bool     `yaml:"counter"`
	AutoMerge bool     `yaml:"auto-merge"`
	Comment   *string  `yaml:"comment"`
	Elements  []string `yaml:"elements"`
}

type fwChain struct {
	Type     string   `yaml:"type"`
	Hook     string   `yaml:"hook"`
	Priority string   `yaml:"priority"`
	Policy   string   `yaml:"policy"`
	Device   string   `yaml:"device"`
	Rules    []string `yaml:"rules"`
}

// pairs are a mapping node's keys and values, in the file's order.
func pairs(n yaml.Node) [][2]*yaml.Node {
	var out [][2]*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		out = append(out, [2]*yaml.Node{n.Content[i], n.Content[i+1]})
	}
	return out
}

// FirewallScript renders a firewall's tables as an nft script, and returns
// the tables' keys ("inet filter").
func FirewallScript(text string) (string, []string, error) {
	var f fwFile
	if err := yaml.Unmarshal([]byte(text), &f); err != nil {
		return "", nil, err
	}
	var b strings.Builder
	var keys []string
	for _, tp := range pairs(f.NFTables) {
		key := tp[0].Value
		keys = append(keys, key)
		var t fwTable
		if err := tp[1].Decode(&t); err != nil {
			return "", nil, fmt.Errorf("%s: %w", key, err)
		}
		fmt.Fprintf(&b, "table %s {\n", key)
		for _, op := range pairs(t.Objects) {
			fmt.Fprintf(&b, "\t%s\n", objectDecl(op[0].Value, op[1].Value))
		}
		for _, kind := range []string{"set", "map"} {
			n := t.Sets
			if kind == "map" {
				n = t.Maps
			}
			for _, sp := range pairs(n) {
				var s fwSet
				if err := sp[1].Decode(&s); err != nil {
					return "", nil, fmt.Errorf("%s %s %s: %w", key, kind, sp[0].Value, err)
				}
				fmt.Fprintf(&b, "\t%s %s { %s }\n", kind, sp[0].Value, setBody(s))
			}
		}
		for _, cp := range pairs(t.Chains) {
			var c fwChain
			if err := cp[1].Decode(&c); err != nil {
				return "", nil, fmt.Errorf("%s chain %s: %w", key, cp[0].Value, err)
			}
			fmt.Fprintf(&b, "\tchain %s {\n", cp[0].Value)
			if c.Hook != "" {
				dev := ""
				if c.Device != "" {
					dev = fmt.Sprintf(" device %q", c.Device)
				}
				fmt.Fprintf(&b, "\t\ttype %s hook %s%s priority %s;", cmpOr(c.Type, "filter"), c.Hook, dev, cmpOr(c.Priority, "0"))
				if c.Policy != "" {
					fmt.Fprintf(&b, " policy %s;", c.Policy)
				}
				b.WriteString("\n")
			}
			for _, r := range c.Rules {
				fmt.Fprintf(&b, "\t\t%s\n", r)
			}
			b.WriteString("\t}\n")
		}
		b.WriteString("}\n")
	}
	return b.String(), keys, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// objectDecl is an object of the file (its text without its name) as nft
// declares it in a table.
func objectDecl(name, text string) string {
	text = strings.TrimSpace(text)
	for _, kind := range []string{"ct helper", "ct timeout", "ct expectation", "counter", "quota", "limit", "synproxy", "secmark"} {
		rest, ok := strings.CutPrefix(text, kind)
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		if strings.HasPrefix(rest, "{") {
			return kind + " " + name + " " + rest
		}
		return kind + " " + name + " { " + rest + " }"
	}
	return text
}

func setBody(s fwSet) string {
	var parts []string
	if s.Typeof != "" {
		parts = append(parts, "typeof "+s.Typeof)
	} else {
		parts = append(parts, "type "+s.Type)
	}
	if len(s.Flags) > 0 {
		parts = append(parts, "flags "+strings.Join(s.Flags, ","))
	}
	for _, kv := range [][2]string{{"timeout", s.Timeout}, {"size", s.Size}, {"policy", s.Policy}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if s.Counter {
		parts = append(parts, "counter")
	}
	if s.AutoMerge {
		parts = append(parts, "auto-merge")
	}
	if s.Comment != nil {
		c, _ := json.Marshal(*s.Comment)
		parts = append(parts, "comment "+string(c))
	}
	if len(s.Elements) > 0 {
		parts = append(parts, "elements = { "+strings.Join(s.Elements, ", ")+" }")
	}
	return strings.Join(parts, "; ") + ";"
}

// ReadTable renders a table of a namespace for comparison: each chain's
// rules, bytecode (anonymous sets by content) and words, and nft's listing
// of the table without handles.
func ReadTable(t testing.TB, ns, key string) string {
	t.Helper()
	fam, name, _ := strings.Cut(key, " ")
	rs := readTableRules(t, ns, fam, name)
	chains := make([]string, 0, len(rs))
	for c := range rs {
		chains = append(chains, c)
	}
	sort.Strings(chains)
	var b strings.Builder
	for _, c := range chains {
		for i, r := range rs[c] {
			fmt.Fprintf(&b, "%s[%d]:\n%s\n", c, i, r)
		}
	}
	list := nettest.InNS(t, ns, "nft", "-s", "list", "table", fam, name)
	lines := strings.Split(list, "\n")
	b.WriteString(strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "" }), "\n"))
	return b.String()
}
