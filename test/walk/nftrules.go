package walk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/netreconcile/netreconcile/test/nftcorpus"
)

// The walk's nftables rules come from the differential's corpus
// (test/nftcorpus): nft's syntax classes, in the chains of the walk's
// tables, each rule one nft takes in a chain of that type and hook. The
// oracle compares each chain's rules with what nft makes of the same table
// loaded by nft -f in a namespace of its own (nft -j, the bytecode's
// expressions), not with the file's words: nft lists "tcp dport 022" as
// "tcp dport 18".

// corpusChain is the chain of the corpus's standard tables with a walk
// chain's type and hook.
func corpusChain(ch *Chain) string {
	switch ch.chainType() + " " + ch.Hook {
	case "filter input":
		return "in"
	case "filter output":
		return "out"
	case "filter forward":
		return "forw"
	case "filter prerouting":
		return "pre"
	case "filter postrouting":
		return "post"
	case "nat prerouting":
		return "natpre"
	case "nat postrouting":
		return "natpost"
	case "route output":
		return "rout"
	case "filter ingress":
		return "ing"
	case "filter ":
		return "helper"
	}
	return ""
}

// walkable reports whether a corpus rule may go in a walk table: it names
// no set but the walk's own (repair drops a rule whose set is not
// declared), no object, map or chain of the corpus's tables, and changes
// no set from the packet path (the walk's sets are the file's).
func walkable(r string) bool {
	for _, bad := range []string{" name ", "name \"", "helper set", "timeout set", "expectation set", "synproxy", "meter ",
		"add @", "update @", "delete @", "@vm", "@mm", "@nm", "@pm", "@om", "@qm", "@ifv", "@ifn", "@eth", "@cs", "@st",
		"@dyn", "@spr", "@nope", "@s6 ", "jump in", "goto nowhere", "jump nowhere"} {
		if strings.Contains(r+" ", bad) {
			return false
		}
	}
	if i := strings.Index(r, "@"); i >= 0 && !strings.HasPrefix(r[i:], "@s4") && !strings.HasPrefix(r[i:], "@s6") &&
		!strings.HasPrefix(r[i:], "@sp") && !strings.HasPrefix(r[i:], "@sm") && !strings.HasPrefix(r[i:], "@nh") &&
		!strings.HasPrefix(r[i:], "@th") && !strings.HasPrefix(r[i:], "@ll") {
		return false
	}
	return true
}

var (
	poolMu       sync.Mutex
	nftPoolCache = map[string]map[string][]string{}
)

// inNewNetNS runs a shell command in a network namespace of its own
// (root), with stdin.
func inNewNetNS(script, stdin string) ([]byte, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET}
	cmd.Stdin = strings.NewReader(stdin)
	return cmd.CombinedOutput()
}

// joinParts puts scripts on a line each, for the shell loop of
// NftRulePool: their lines joined by \001, which no rule holds.
func joinParts(scripts []string) string {
	var b strings.Builder
	for _, s := range scripts {
		b.WriteString(strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\001"))
		b.WriteByte('\n')
	}
	return b.String()
}

// NftRulePool returns the corpus's rules nft takes, by corpus chain, for a
// family: the pool the walk draws from (computed once, with nft -f in a
// namespace of its own).
func NftRulePool(family string) (map[string][]string, error) {
	poolMu.Lock()
	defer poolMu.Unlock()
	if p, ok := nftPoolCache[family]; ok {
		return p, nil
	}
	var cases []nftcorpus.Case
	for _, c := range nftcorpus.Corpus() {
		if c.Family == family && walkable(c.Rule) {
			cases = append(cases, c)
		}
	}
	took, _, err := nftcorpus.NftTakes(family, cases, func(scripts []string) ([]byte, int, error) {
		// The scripts in turn, in one namespace: each on a descriptor
		// of its own would need files; a line of its own splits them.
		out, err := inNewNetNS(`i=0; while IFS= read -r f; do printf '%s\n' "$f" | tr '\001' '\n' | nft -f - || { echo "failed-part $i"; exit 1; }; i=$((i+1)); done`,
			joinParts(scripts))
		if err == nil {
			return out, 0, nil
		}
		failed := 0
		if _, n, ok := strings.Cut(string(out), "failed-part "); ok {
			failed, _ = strconv.Atoi(strings.TrimSpace(n))
		}
		return out, failed, err
	}, func(scripts []string) ([]bool, error) {
		out, err := inNewNetNS(`while IFS= read -r f; do printf '%s\n' "$f" | tr '\001' '\n' | nft -c -f - >/dev/null 2>&1 && echo ok || echo no; done`,
			joinParts(scripts))
		if err != nil {
			return nil, fmt.Errorf("nft -c: %w: %s", err, out)
		}
		return nftcorpus.Checked(out, len(scripts))
	})
	if err != nil {
		return nil, err
	}
	p := map[string][]string{}
	for i, c := range cases {
		if took[i] {
			p[c.Chain] = append(p[c.Chain], c.Rule)
		}
	}
	nftPoolCache[family] = p
	return p, nil
}

// corpusPool is the pool without nft's judgement, for walks whose kernel
// compiles anything (the in-memory one). Made once per family: the
// generator asks for it at every rule it draws, and parsing the corpus
// each time was an eighth of the schema-reach test's CPU. Callers only
// read it.
func corpusPool(family string) map[string][]string {
	corpusPools.Lock()
	defer corpusPools.Unlock()
	if p, ok := corpusPools.m[family]; ok {
		return p
	}
	p := map[string][]string{}
	for _, c := range nftcorpus.Corpus() {
		if c.Family == family && walkable(c.Rule) {
			p[c.Chain] = append(p[c.Chain], c.Rule)
		}
	}
	corpusPools.m[family] = p
	return p
}

var corpusPools = struct {
	sync.Mutex
	m map[string]map[string][]string
}{m: map[string]map[string][]string{}}

// nftRuleJSON is a rule of `nft -j list`: its expressions and comment,
// stateful values zeroed.
func nftRuleJSON(raw json.RawMessage) string {
	var r struct {
		Expr    any    `json:"expr"`
		Comment string `json:"comment"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return "unreadable: " + string(raw)
	}
	zero(r.Expr)
	b, _ := json.Marshal(r)
	return string(b)
}

// zero zeroes the values a rule counts: a counter's packets and bytes, a
// quota's use, when a rule or element was last used.
func zero(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "counter":
				if m, ok := e.(map[string]any); ok {
					m["packets"], m["bytes"] = 0, 0
					continue
				}
			case "quota":
				if m, ok := e.(map[string]any); ok {
					delete(m, "used")
					delete(m, "used_unit")
					continue
				}
			case "last":
				if m, ok := e.(map[string]any); ok {
					delete(m, "used")
					continue
				}
			}
			zero(e)
		}
	case []any:
		for _, e := range x {
			zero(e)
		}
	}
}

// nftTableRules reads each chain's rules of a table from `nft -j list`.
func nftTableRules(out, family, table string) (map[string][]string, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("nft -j: %w", err)
	}
	rules := map[string][]string{}
	for _, o := range doc.Nftables {
		raw, ok := o["rule"]
		if !ok {
			continue
		}
		var head struct{ Family, Table, Chain string }
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, err
		}
		if head.Family == family && head.Table == table {
			rules[head.Chain] = append(rules[head.Chain], nftRuleJSON(raw))
		}
	}
	return rules, nil
}

// nftScript is the walk's table in nft's words: its sets declared (without
// elements: rules do not depend on them), its sets, maps and objects in
// nft's words as the file declares them (elements included), its chains,
// its rules. names maps
// the script's chain names to the table's: nft's parser takes some words
// only as keywords (fwd, a statement of the netdev family), never as a
// chain's name, which netlink and the kernel allow; a chain no rule names
// (jump, goto) is written under a name of the script's own.
func nftScript(t *Table) (script string, names map[string]string) {
	named := map[string]bool{}
	for _, ch := range t.Chains {
		for _, r := range ch.Rules {
			for _, to := range jumpTargets(r) {
				named[to] = true
			}
		}
	}
	// A verdict map's elements jump too.
	for _, s := range t.NSets {
		for _, e := range append(slices.Clone(s.Elements), s.FileElements...) {
			for _, to := range jumpTargets(e) {
				named[to] = true
			}
		}
	}
	names = map[string]string{}
	as := func(ch *Chain) string {
		n := ch.Name
		if !named[n] {
			n = "c_" + n
		}
		names[n] = ch.Name
		return n
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "table %s %s {\n", t.Family, t.Name)
	for _, s := range t.Sets {
		var flags []string
		if s.Interval {
			flags = append(flags, "interval")
		}
		if s.Timeout != "" {
			flags = append(flags, "timeout")
		}
		f := ""
		if len(flags) > 0 {
			f = " flags " + strings.Join(flags, ",") + ";"
		}
		fmt.Fprintf(&b, "\tset %s { type %s;%s }\n", s.Name, s.Type, f)
	}
	for _, s := range t.NSets {
		fmt.Fprintf(&b, "\t%s\n", s.nft())
	}
	for _, o := range t.Objects {
		kind, body, _ := strings.Cut(o.Decl, " ")
		fmt.Fprintf(&b, "\t%s %s { %s }\n", kind, o.Name, body)
	}
	for _, ch := range t.Chains {
		if ch.Hook == "" {
			fmt.Fprintf(&b, "\tchain %s { }\n", as(ch))
			continue
		}
		dev := ""
		if ch.Device != "" {
			dev = fmt.Sprintf(" device %q", ch.Device)
		}
		fmt.Fprintf(&b, "\tchain %s { type %s hook %s%s priority %s; policy %s; }\n", as(ch), ch.chainType(), ch.Hook, dev, ch.Priority, ch.Policy)
	}
	b.WriteString("}\n")
	for _, ch := range t.Chains {
		for _, r := range ch.Rules {
			fmt.Fprintf(&b, "add rule %s %s %s %s\n", t.Family, t.Name, as(ch), r)
		}
	}
	return b.String(), names
}

// nft is the set's declaration in nft's words, elements included.
func (s *NSet) nft() string {
	typ := "type " + s.Type
	if s.Typeof != "" {
		typ = "typeof " + s.Typeof
	}
	d := []string{typ}
	if len(s.Flags) > 0 {
		d = append(d, "flags "+strings.Join(s.Flags, ","))
	}
	if s.Timeout != "" {
		d = append(d, "timeout "+s.Timeout)
	}
	if s.Size != 0 {
		d = append(d, fmt.Sprintf("size %d", s.Size))
	}
	if s.Policy != "" {
		d = append(d, "policy "+s.Policy)
	}
	if s.Counter {
		d = append(d, "counter")
	}
	if s.Merge {
		d = append(d, "auto-merge")
	}
	if s.Comment != "" {
		d = append(d, fmt.Sprintf("comment %q", s.Comment))
	}
	if es := append(append([]string(nil), s.Elements...), s.FileElements...); len(es) > 0 {
		d = append(d, "elements = { "+strings.Join(es, ", ")+" }")
	}
	return fmt.Sprintf("%s %s { %s; }", map[bool]string{true: "map", false: "set"}[s.Map], s.Name, strings.Join(d, "; "))
}

// nftMade is what nft makes of the walk's table: each chain's rules as
// `nft -j list` gives them, and the sets, maps and objects in nft's words
// (nftDecls).
type nftMade struct {
	rules map[string][]string
	decls map[string]string
}

// listMark separates nft -j's listing from nft's in nftMakes's output.
const listMark = "--- nft list ---"

// nftMakes is what nft makes of the walk's table, from nft -f in a
// namespace of its own. links are the kernel's links by name and index
// (ip -j link): a link the table's rules name (iif, oif) is made there
// under its name and index first, a bridge, since nft compiles the name to
// the index it finds and lists an index by the name it finds. The walk's
// listing (nft in the walk's namespace) and this one then name the same
// link only where the kernel's rule holds the index the link has now.
func nftMakes(t *Table, links map[string]int) (*nftMade, error) {
	script, names := nftScript(t)
	list := fmt.Sprintf("nft -j list table %s %s && echo '%s' && nft list table %s %s", t.Family, t.Name, listMark, t.Family, t.Name)
	standIns := ""
	for _, n := range sortedKeys(links) {
		if n != "lo" && tableNames(t, n) {
			// Under its index where that is free: a fresh namespace
			// holds the fallback devices of the tunnel modules loaded
			// (tunl0, ip6tnl0…) at the first indexes, which the walk's
			// namespace, made before some were loaded, gave its own
			// links. The listings name a link by its name either way.
			standIns += fmt.Sprintf("{ %[1]s link add %[2]s index %[3]d type bridge 2>/dev/null || %[1]s link add %[2]s type bridge; } && ", ipProgram(), n, links[n])
		}
	}
	out, err := inNewNetNS(standIns+"nft -f - && "+list, script)
	if err != nil {
		// nft's scanner keeps state from one command to the next in one
		// run (nftcompile's syntaxErrorPrefix): rules it takes each alone
		// may be refused together. The product judges such a rule alone,
		// and so does the oracle: the declarations, then each rule by a
		// nft of its own.
		head, rules, _ := strings.Cut(script, "\nadd rule ")
		parts := []string{head + "\n"}
		for _, r := range strings.Split(strings.TrimSuffix(rules, "\n"), "\nadd rule ") {
			if r != "" {
				parts = append(parts, "add rule "+r+"\n")
			}
		}
		var again []byte
		again, err = inNewNetNS(standIns+`while IFS= read -r f; do printf '%s\n' "$f" | tr '\001' '\n' | nft -f - || exit 1; done && `+list, joinParts(parts))
		if err != nil {
			return nil, fmt.Errorf("nft -f of table %s %s: %v: %s (rule by rule: %s)", t.Family, t.Name, err, out, again)
		}
		out = again
	}
	js, text, _ := strings.Cut(string(out), listMark)
	rules, err := nftTableRules(js, t.Family, t.Name)
	if err != nil {
		return nil, err
	}
	byName := make(map[string][]string, len(rules))
	for n, r := range rules {
		byName[names[n]] = r
	}
	decls, err := nftDecls(js, text, t)
	if err != nil {
		return nil, err
	}
	return &nftMade{rules: byName, decls: decls}, nil
}

// ipProgram is iproute2's ip as the walk runs it: the guest's shell is
// busybox's, which runs its own ip applet before $PATH's, and that one
// takes "index N" for the link's name.
var ipProgram = sync.OnceValue(func() string {
	if p, err := exec.LookPath("ip"); err == nil {
		return p
	}
	return "ip"
})

// tableNames reports whether a rule or element of t names link n, quoted
// as nft takes a name ("b0").
func tableNames(t *Table, n string) bool {
	q := `"` + n + `"`
	for _, ch := range t.Chains {
		for _, r := range ch.Rules {
			if strings.Contains(r, q) {
				return true
			}
		}
	}
	for _, s := range t.NSets {
		for _, e := range append(slices.Clone(s.Elements), s.FileElements...) {
			if strings.Contains(e, q) {
				return true
			}
		}
	}
	return false
}

// nftDecls reads a table's sets, maps and objects in nft's words from nft's
// listings, `nft -j list` (js) and `nft list` (text, with or without
// handles): for each, keyed "KIND NAME" ("map vm", "quota oq"), its JSON
// without handle, stateful values zeroed, elements sorted; and for a set
// or map, keyed "text set NAME", the lines of nft's listing before its
// elements (typeof and auto-merge are not in nft's JSON). The table's sets
// of netreconcile's own making (t.Sets) are not in it: setText compares
// them.
func nftDecls(js, text string, t *Table) (map[string]string, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		return nil, fmt.Errorf("nft -j: %w", err)
	}
	own := map[string]bool{}
	for _, s := range t.Sets {
		own[s.Name] = true
	}
	out := map[string]string{}
	for _, o := range doc.Nftables {
		for kind, raw := range o {
			switch kind {
			case "metainfo", "table", "chain", "rule", "element":
				continue
			}
			var v map[string]any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("nft -j %s: %w", kind, err)
			}
			if v["family"] != t.Family || v["table"] != t.Name {
				continue
			}
			name, _ := v["name"].(string)
			if kind == "set" && own[name] {
				continue
			}
			delete(v, "handle")
			// A named counter's or quota's values are the object itself
			// ({"quota": {…, "used": 96}}): zero them as in a rule's
			// expression, whose key names the kind.
			zero(map[string]any{kind: v})
			if es, ok := v["elem"].([]any); ok {
				sort.Slice(es, func(i, j int) bool {
					a, _ := json.Marshal(es[i])
					b, _ := json.Marshal(es[j])
					return string(a) < string(b)
				})
			}
			b, _ := json.Marshal(v)
			out[kind+" "+name] = string(b)
		}
	}
	in, elems, block := false, false, ""
	var lines []string
	for _, line := range strings.Split(text, "\n") {
		s := strings.TrimSpace(handleRE.ReplaceAllString(line, ""))
		f := strings.Fields(s)
		switch {
		case strings.HasPrefix(s, "table ") && strings.HasSuffix(s, "{"):
			in = len(f) >= 3 && f[1] == t.Family && f[2] == t.Name
		case !in:
		case block == "":
			if len(f) == 3 && (f[0] == "set" || f[0] == "map") && f[2] == "{" && !own[f[1]] {
				block, lines, elems = "text "+f[0]+" "+f[1], nil, false
			}
		case s == "}":
			out[block] = strings.Join(lines, "; ")
			block = ""
		case strings.HasPrefix(s, "elements = "):
			// The elements, to the block's end: the JSON has them.
			elems = true
		case !elems:
			lines = append(lines, s)
		}
	}
	return out, nil
}
