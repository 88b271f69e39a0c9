package walk

import (
	"encoding/json"
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

var (
	counterRE = regexp.MustCompile(` packets \d+ bytes \d+| used \d+ [a-z]*bytes`)
	handleRE  = regexp.MustCompile(`\s*# handle \d+$`)
)

// nftChain is a chain of `nft list`: its header line and rules.
type nftChain struct {
	Header string
	Rules  []string
}

// parseNftTables splits `nft -a list ruleset` into tables ("FAMILY NAME") and
// parses each one's chains, without handles and counters.
func parseNftTables(out string) map[string]map[string]*nftChain {
	tables := map[string]map[string]*nftChain{}
	var chains map[string]*nftChain
	var cur *nftChain
	for _, line := range strings.Split(out, "\n") {
		s := strings.TrimSpace(handleRE.ReplaceAllString(line, ""))
		switch {
		case strings.HasPrefix(s, "table ") && strings.HasSuffix(s, "{"):
			f := strings.Fields(s)
			chains = map[string]*nftChain{}
			tables[f[1]+" "+f[2]] = chains
		case chains != nil && strings.HasPrefix(s, "chain ") && strings.HasSuffix(s, "{"):
			cur = &nftChain{}
			chains[strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(s, "chain "), "{"))] = cur
		case cur != nil && s == "}":
			cur = nil
		case cur != nil && s != "":
			if strings.HasPrefix(s, "type ") {
				cur.Header = s
				continue
			}
			cur.Rules = append(cur.Rules, counterRE.ReplaceAllString(s, ""))
		}
	}
	return tables
}

// nftSets reads the sets of table (family, name) from `nft -j list ruleset`.
func nftSets(out, family, table string) (map[string]string, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("nft -j: %w", err)
	}
	sets := map[string]string{}
	for _, o := range doc.Nftables {
		raw, ok := o["set"]
		if !ok {
			continue
		}
		var s struct {
			Family  string            `json:"family"`
			Table   string            `json:"table"`
			Name    string            `json:"name"`
			Type    string            `json:"type"`
			Flags   []string          `json:"flags"`
			Timeout int               `json:"timeout"`
			Elem    []json.RawMessage `json:"elem"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("nft -j set: %w", err)
		}
		if s.Family != family || s.Table != table {
			continue
		}
		var es []string
		for _, e := range s.Elem {
			// An element with a timeout or an expiry is an object:
			// {"elem": {"val": V, "expires": N}}.
			var w struct {
				Elem *struct {
					Val json.RawMessage `json:"val"`
				} `json:"elem"`
			}
			if json.Unmarshal(e, &w) == nil && w.Elem != nil {
				e = w.Elem.Val
			}
			var x struct {
				Prefix *struct {
					Addr string `json:"addr"`
					Len  int    `json:"len"`
				} `json:"prefix"`
				Range []any `json:"range"`
			}
			var str string
			var num float64
			switch {
			case json.Unmarshal(e, &str) == nil:
				es = append(es, str)
			case json.Unmarshal(e, &num) == nil:
				es = append(es, strconv.Itoa(int(num)))
			case json.Unmarshal(e, &x) == nil && x.Prefix != nil:
				es = append(es, fmt.Sprintf("%s/%d", x.Prefix.Addr, x.Prefix.Len))
			case x.Range != nil:
				es = append(es, fmt.Sprintf("%v-%v", x.Range[0], x.Range[1]))
			default:
				es = append(es, string(e))
			}
		}
		timeout := ""
		switch {
		case s.Timeout != 0:
			timeout = fmt.Sprintf(" timeout %ds", s.Timeout)
		case contains(s.Flags, "timeout"):
			timeout = " timeout flag"
		}
		sets[s.Name] = setText(s.Type, contains(s.Flags, "interval"), es) + timeout
		if contains(s.Flags, "interval") {
			sets[s.Name+" ranges"] = rangeText(es)
		}
	}
	return sets, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func setText(typ string, interval bool, es []string) string {
	var norm []string
	for _, e := range es {
		if typ == "mark" {
			if v, err := strconv.ParseUint(e, 0, 32); err == nil {
				e = fmt.Sprintf("%#08x", v)
			}
		}
		norm = append(norm, e)
	}
	sort.Strings(norm)
	return fmt.Sprintf("type %s interval %v elements %v", typ, interval, norm)
}

// CompareNft compares the nftables tables of the reading with c: every
// declared table as declared, no other table of the walk's names left.
func CompareNft(c *Config, k *Kernel, skip, foreign map[string]bool) ([]string, error) {
	var diffs []string
	bad := func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) }
	tables := parseNftTables(k.NftText)
	declared := map[string]bool{}
	for _, t := range c.Tables {
		declared[t.Family+" "+t.Name] = true
	}
	for id := range tables {
		if strings.Contains(id, " nrw") && !declared[id] && id != "ip6 nrw0" && !foreign[id] {
			bad("nftables %s: ours but not in the file (not deleted)", id)
		}
	}
	links := map[string]int{}
	for n, l := range k.Links {
		links[n] = l.Index
	}
	for _, t := range c.Tables {
		id := t.Family + " " + t.Name
		if skip[id] || namesMissingLink(c, t, links) {
			// A table whose rules name a link of the file the kernel
			// lacks (left out by a conflict, which the link's check
			// judges) waits for it, as it is (docs/config.md).
			continue
		}
		chains, ok := tables[id]
		if !ok {
			bad("nftables %s: missing", id)
			continue
		}
		gotSets, err := nftSets(k.NftJSON, t.Family, t.Name)
		if err != nil {
			return nil, err
		}
		var made *nftMade
		var gotRules map[string][]string
		makes := func() (err error) {
			if made == nil {
				made, err = nftMakes(t, links)
			}
			return err
		}
		for _, s := range t.Sets {
			elems := append(append([]string(nil), s.Elements...), s.FileElements...)
			want := setText(s.Type, s.Interval, elems)
			switch s.Timeout {
			case "":
			case "flag":
				want += " timeout flag"
			default:
				d, _ := time.ParseDuration(s.Timeout)
				want += fmt.Sprintf(" timeout %ds", int(d.Seconds()))
			}
			got, ok := gotSets[s.Name]
			if s.FromWG != "" {
				// The union of the literal elements and the peers'
				// IPv4 allowed IPs, overlaps merged: compared as the
				// addresses covered.
				es := elems
				if w := c.Links[s.FromWG]; w != nil && w.WG != nil && s.FromPeers == "all" {
					for _, p := range w.WG.Peers {
						for _, a := range p.AllowedIPs {
							if !strings.Contains(a, ":") {
								es = append(es, a)
							}
						}
					}
				}
				want, got = rangeText(es), gotSets[s.Name+" ranges"]
			}
			if !ok {
				bad("nftables %s: set %s missing", id, s.Name)
			} else if got != want {
				bad("nftables %s: set %s: %s, want %s", id, s.Name, got, want)
			}
			delete(gotSets, s.Name)
			delete(gotSets, s.Name+" ranges")
		}
		for _, s := range t.NSets {
			delete(gotSets, s.Name)
			delete(gotSets, s.Name+" ranges")
		}
		// The sets, maps and objects in nft's words, as nft makes them of
		// the file's words (nft -j and nft list).
		wantDecls := map[string]string{}
		if len(t.NSets)+len(t.Objects) > 0 {
			if err := makes(); err != nil {
				return nil, err
			}
			wantDecls = made.decls
		}
		gotDecls, err := nftDecls(k.NftJSON, k.NftText, t)
		if err != nil {
			return nil, err
		}
		for _, n := range sortedKeys(union(gotDecls, wantDecls)) {
			g, w := gotDecls[n], wantDecls[n]
			switch {
			case w == "":
				bad("nftables %s: %s not in the file: %s", id, n, g)
			case g == "":
				bad("nftables %s: %s missing (want %s)", id, n, w)
			case g != w:
				bad("nftables %s: %s:\n%s\nwant (nft -f of the file's words):\n%s", id, n, g, w)
			}
		}
		for n := range gotSets {
			if !strings.HasSuffix(n, " ranges") {
				bad("nftables %s: set %s not in the file", id, n)
			}
		}
		for _, ch := range t.Chains {
			got := chains[ch.Name]
			if got == nil {
				bad("nftables %s: chain %s missing", id, ch.Name)
				continue
			}
			delete(chains, ch.Name)
			want := ""
			if ch.Hook != "" {
				dev := ""
				if ch.Device != "" {
					dev = fmt.Sprintf(" device %q", ch.Device)
				}
				want = fmt.Sprintf("type %s hook %s%s priority %s; policy %s;", ch.chainType(), ch.Hook, dev, ch.Priority, ch.Policy)
			}
			if got.Header != want {
				bad("nftables %s: chain %s: %q, want %q", id, ch.Name, got.Header, want)
			}
			// The rules as nft makes them of the same table (nft -j).
			if gotRules == nil {
				if err := makes(); err != nil {
					return nil, err
				}
				if gotRules, err = nftTableRules(k.NftJSON, t.Family, t.Name); err != nil {
					return nil, err
				}
			}
			if g, w := strings.Join(gotRules[ch.Name], "\n"), strings.Join(made.rules[ch.Name], "\n"); g != w {
				bad("nftables %s: chain %s rules (nft -j, counters zeroed):\n%s\nwant (nft -f of the file's rules):\n%s\nthe file's rules: %q",
					id, ch.Name, g, w, ch.Rules)
			}
		}
		for n := range chains {
			bad("nftables %s: chain %s not in the file", id, n)
		}
	}
	return diffs, nil
}

// namesMissingLink reports whether a rule or element of t names a link of c
// that links (the kernel's) lacks.
func namesMissingLink(c *Config, t *Table, links map[string]int) bool {
	for _, n := range c.LinkNames() {
		if _, ok := links[n]; !ok && tableNames(t, n) {
			return true
		}
	}
	return false
}

// union is the keys of a and b, with a's values.
func union(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k := range b {
		out[k] = b[k]
	}
	for k := range a {
		out[k] = a[k]
	}
	return out
}

// CompareWG compares the WireGuard devices of c with `wg show NAME dump`.
func CompareWG(ns string, c *Config) ([]string, error) {
	var diffs []string
	for _, n := range c.LinkNames() {
		l := c.Links[n]
		if l.WG == nil {
			continue
		}
		out, err := run("ip", "netns", "exec", ns, "wg", "show", n, "dump")
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("wireguard %s: %v", n, err))
			continue
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		f := strings.Split(lines[0], "\t")
		fw := "off"
		if l.WG.Fwmark != 0 {
			fw = fmt.Sprintf("0x%x", l.WG.Fwmark)
		}
		got := fmt.Sprintf("public %s fwmark %s", f[1], f[3])
		want := fmt.Sprintf("public %s fwmark %s", l.WG.PublicKey, fw)
		if l.WG.ListenPort != 0 {
			got += " port " + f[2]
			want += fmt.Sprintf(" port %d", l.WG.ListenPort)
		}
		if got != want {
			diffs = append(diffs, fmt.Sprintf("wireguard %s: %s, want %s", n, got, want))
		}
		// WireGuard cannot forget an endpoint (only removing the peer
		// does): a peer the file gives no endpoint may keep its last one.
		free := map[string]bool{}
		cands := map[string][]string{}
		for _, p := range l.WG.Peers {
			if len(p.Endpoints) == 0 {
				free[p.PublicKey] = true
			}
			cands[p.PublicKey] = p.Endpoints
		}
		var gp, wp []string
		for _, line := range lines[1:] {
			p := strings.Split(line, "\t")
			ips := strings.Split(p[3], ",")
			sort.Strings(ips)
			if free[p[0]] {
				p[2] = "(none)"
			}
			// One of the candidates: apply keeps one the device has,
			// else sets the first.
			if cs := cands[p[0]]; len(cs) > 0 && contains(cs, p[2]) {
				p[2] = "candidate"
			}
			gp = append(gp, fmt.Sprintf("%s endpoint %s allowed %s keepalive %s psk %s", p[0], p[2], strings.Join(ips, ","), p[7], p[1]))
		}
		for _, p := range l.WG.Peers {
			ips := append([]string(nil), p.AllowedIPs...)
			if len(ips) == 0 {
				ips = []string{"(none)"}
			}
			sort.Strings(ips)
			ep, ka, psk := "(none)", "off", "(none)"
			if len(p.Endpoints) > 0 {
				ep = "candidate"
			}
			if p.Keepalive != 0 {
				ka = strconv.Itoa(p.Keepalive)
			}
			if p.PSK != "" {
				psk = p.PSK
			}
			wp = append(wp, fmt.Sprintf("%s endpoint %s allowed %s keepalive %s psk %s", p.PublicKey, ep, strings.Join(ips, ","), ka, psk))
		}
		diffSets("wireguard "+n+" peer", gp, wp, func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) })
	}
	return diffs, nil
}

// walkFouPorts are the FoU ports the generator opens (gen.go): every other
// port is someone else's (KindForeign's).
var walkFouPorts = map[int]bool{5555: true, 5556: true, 5557: true}

// CompareFou compares `ip fou show` with the file's ports: the walk's ports
// must be the file's, and the others' exactly foreign, the ports someone
// else opened before the walk (FouForeign).
func CompareFou(ns string, c *Config, foreign []string) ([]string, error) {
	got, others, err := FouPorts(ns)
	if err != nil {
		return nil, err
	}
	var want []string
	for _, f := range c.Fou {
		s := fmt.Sprintf("port %d ipproto %d", f.Port, f.IPProto)
		if f.GUE {
			s = fmt.Sprintf("port %d gue", f.Port)
		}
		if f.Family == "ipv6" {
			s += " -6"
		}
		want = append(want, s)
	}
	var diffs []string
	diffSets("fou", got, want, func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) })
	diffSets("someone else's fou", others, slices.Clone(foreign), func(f string, a ...any) { diffs = append(diffs, fmt.Sprintf(f, a...)) })
	return diffs, nil
}

// FouPorts lists `ip fou show`: the lines of the walk's ports, and the
// others'.
func FouPorts(ns string) (walk, others []string, err error) {
	out, err := run("ip", "-n", ns, "fou", "show")
	if err != nil {
		return nil, nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var port int
		if _, err := fmt.Sscanf(line, "port %d", &port); err == nil && walkFouPorts[port] {
			walk = append(walk, line)
		} else {
			others = append(others, line)
		}
	}
	return walk, others, nil
}

// nftHandles are the kernel's handles of the walk's nftables objects, from
// `nft -a list ruleset`, keyed like the plan's op IDs: "FAMILY NAME" for a
// table, "FAMILY NAME set S" (a map's too), "FAMILY NAME object O",
// "FAMILY NAME chain C", and for a rule
// "FAMILY NAME chain C rule handle H" (its value is the rule's text).
type nftHandles map[string]string

var handleNumRE = regexp.MustCompile(`# handle (\d+)$`)

func parseNftHandles(out string) nftHandles {
	h := nftHandles{}
	var table, chain string
	inSet := false
	for _, line := range strings.Split(out, "\n") {
		s := strings.TrimSpace(line)
		m := handleNumRE.FindStringSubmatch(s)
		body := strings.TrimSpace(handleRE.ReplaceAllString(s, ""))
		switch {
		case strings.HasPrefix(body, "table ") && strings.HasSuffix(body, "{"):
			f := strings.Fields(body)
			table, chain = f[1]+" "+f[2], ""
			if m != nil {
				h[table] = m[1]
			}
		case inSet:
			inSet = s != "}"
		case table != "" && (strings.HasPrefix(body, "set ") || strings.HasPrefix(body, "map ")) && strings.HasSuffix(body, "{"):
			inSet = true
			if m != nil {
				h[table+" set "+strings.Fields(body)[1]] = m[1]
			}
		case table != "" && strings.HasPrefix(body, "chain ") && strings.HasSuffix(body, "{"):
			chain = strings.Fields(body)[1]
			if m != nil {
				h[table+" chain "+chain] = m[1]
			}
		case table != "" && chain == "" && strings.HasSuffix(body, "{"):
			// A named object ("counter oc {", "ct helper h {"): a block
			// of its own.
			inSet = true
			if f := strings.Fields(body); m != nil {
				h[table+" object "+f[len(f)-2]] = m[1]
			}
		case chain != "" && m != nil:
			h[table+" chain "+chain+" rule handle "+m[1]] = counterRE.ReplaceAllString(body, "")
		case s == "}" && chain != "":
			chain = ""
		case s == "}":
			table = ""
		}
	}
	return h
}

// CompareNftHandles checks that the walk's nftables objects the plan left
// in place kept their kernel handles: a declared table that the plan did
// not create, replace or delete keeps its handle, and so do its sets and
// chains that the plan did not create or delete, and its rules that the
// plan did not delete (a rule the plan replaces in place keeps its handle
// too; its text may change). Rules the plan did not touch keep their text.
func CompareNftHandles(c *Config, before, after *Kernel, ops []planOp, skip, foreign map[string]bool) []string {
	var diffs []string
	bh, ah := parseNftHandles(before.NftText), parseNftHandles(after.NftText)
	touched := map[string]string{}
	replaced := map[string]bool{}
	for _, op := range ops {
		if !strings.HasPrefix(op.Kind, "nft_") {
			continue
		}
		touched[op.ID] = op.Action
		for _, ch := range op.Changes {
			if strings.HasPrefix(ch.Field, "handle ") && op.Action == "update" {
				// "FAMILY NAME chain C rule N" replaces handle H.
				if i := strings.Index(op.ID, " rule "); i >= 0 {
					replaced[op.ID[:i]+" rule "+ch.Field] = true
				}
			}
		}
	}
	for _, t := range c.Tables {
		id := t.Family + " " + t.Name
		if skip[id] || foreign[id] || bh[id] == "" {
			continue
		}
		if a := touched[id]; a == "create" || a == "replace" || a == "delete" {
			continue
		}
		if ah[id] != bh[id] {
			diffs = append(diffs, fmt.Sprintf("nftables %s: handle %s -> %s but the plan changed it in place", id, bh[id], ah[id]))
			continue
		}
		for k, v := range bh {
			if !strings.HasPrefix(k, id+" ") {
				continue
			}
			rest := k[len(id)+1:]
			switch {
			case strings.Contains(rest, " rule handle "):
				chain := id + " " + rest[:strings.Index(rest, " rule handle ")]
				if a := touched[chain]; a == "create" || a == "delete" || a == "replace" || touched[k] == "delete" {
					continue
				}
				got, ok := ah[k]
				switch {
				case !ok:
					diffs = append(diffs, fmt.Sprintf("nftables %s: rule %q (%s) gone but the plan did not delete it", chain, v, rest))
				case !replaced[k] && got != v:
					diffs = append(diffs, fmt.Sprintf("nftables %s: rule %s changed %q -> %q but the plan did not replace it", chain, rest, v, got))
				}
			default:
				if a := touched[k]; a == "create" || a == "delete" || a == "replace" {
					continue
				}
				if ah[k] != v {
					diffs = append(diffs, fmt.Sprintf("nftables %s: handle %s -> %s but the plan kept it", k, v, ah[k]))
				}
			}
		}
	}
	sort.Strings(diffs)
	return diffs
}

// rangeText renders the addresses that elements (addresses, prefixes,
// ranges a-b) cover as merged ranges, adjacent ones joined: two sets that
// cover the same addresses render alike, however they are cut.
func rangeText(es []string) string {
	type rng struct{ lo, hi *big.Int }
	num := func(s string) *big.Int {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return nil
		}
		return new(big.Int).SetBytes(a.AsSlice())
	}
	var rs []rng
	for _, e := range es {
		var r rng
		switch {
		case strings.Contains(e, "/"):
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return "unparsed " + e
			}
			p = p.Masked()
			r.lo = num(p.Addr().String())
			host := p.Addr().BitLen() - p.Bits()
			r.hi = new(big.Int).Add(r.lo, new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), uint(host)), big.NewInt(1)))
		case strings.Contains(e, "-"):
			f := strings.SplitN(e, "-", 2)
			r.lo, r.hi = num(f[0]), num(f[1])
		default:
			r.lo = num(e)
			r.hi = r.lo
		}
		if r.lo == nil || r.hi == nil {
			return "unparsed " + e
		}
		rs = append(rs, r)
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].lo.Cmp(rs[j].lo) < 0 })
	var out []string
	for i := 0; i < len(rs); {
		lo, hi := rs[i].lo, rs[i].hi
		j := i + 1
		for ; j < len(rs) && rs[j].lo.Cmp(new(big.Int).Add(hi, big.NewInt(1))) <= 0; j++ {
			if rs[j].hi.Cmp(hi) > 0 {
				hi = rs[j].hi
			}
		}
		out = append(out, lo.String()+"-"+hi.String())
		i = j
	}
	return strings.Join(out, " ")
}
