package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
)

// compileTimeout bounds one compile of a pass's rules: nft takes
// milliseconds for a rule and a few seconds for ten thousand.
const compileTimeout = 5 * time.Minute

// DefaultCompiler compiles with nft where an Engine is given none. The
// command line sets its Path (--nft).
var DefaultCompiler = &nftcompile.Nft{}

// compilerOf is a kernel that brings its own compiler: the in-memory
// kernel, whose rules are its own compiler's bytes.
type compilerOf interface {
	NFTCompiler() nftcompile.Compiler
}

// PrestartCompile starts nft for the next plan's compile of desired's
// rules ahead of that plan's read of the kernel (nftcompile.Nft.Prestart),
// when desired has rules and nft compiles them. It is for a one-shot
// command that expects to compile rules; the daemon, which keeps the rules
// it compiled in memory, never calls it. The plan ends that nft when its
// compile does not take it.
func (e *Engine) PrestartCompile(desired *model.State) {
	if n, ok := e.compiler().(*nftcompile.Nft); ok && hasRules(desired) {
		n.Prestart()
	}
}

// DropPrestarted ends the nft PrestartCompile started, if no compile took
// it (a command whose plan failed before it compiled), and waits until it
// is gone: the command leaves no process behind (nftcompile.Nft.Settle).
func (e *Engine) DropPrestarted() {
	if n, ok := e.compiler().(*nftcompile.Nft); ok {
		n.Settle()
	}
}

func (e *Engine) compiler() nftcompile.Compiler {
	if e.Compiler != nil {
		return e.Compiler
	}
	if k, ok := e.Kernel.(compilerOf); ok {
		return k.NFTCompiler()
	}
	return DefaultCompiler
}

// hasRules reports whether the state declares any nftables rule, or any
// set or object nft compiles: the things that need nft.
func hasRules(st *model.State) bool {
	for i := range st.NFTables {
		t := &st.NFTables[i]
		if hasDecls(t) {
			return true
		}
		for j := range t.Chains {
			if len(t.Chains[j].Rules) > 0 {
				return true
			}
		}
	}
	return false
}

// ruleCount is the number of rules of a table's chains.
func ruleCount(t *model.NftTable) int {
	n := 0
	for j := range t.Chains {
		n += len(t.Chains[j].Rules)
	}
	return n
}

// hasDecls reports whether a table declares sets or objects nft compiles.
func hasDecls(t *model.NftTable) bool {
	if len(t.Objects) > 0 {
		return true
	}
	for i := range t.Sets {
		if t.Sets[i].Decl != "" {
			return true
		}
	}
	return false
}

// declKey is the compile key of a table's declarations: nft's version, the
// family, every set and object as declared, elements included, and the
// indexes of the links they name (an iface_index set's elements hold them:
// a link made again gets another).
func declKey(version string, t *model.NftTable, links map[string]int) string {
	h := sha256.New()
	w := func(parts ...string) {
		for _, p := range parts {
			fmt.Fprintf(h, "%d:%s", len(p), p)
		}
	}
	w("nft decl key v1", version, t.Family)
	for i := range t.Sets {
		s := &t.Sets[i]
		w("set", s.Name, s.Decl, strconv.FormatBool(s.Map), strconv.Itoa(len(s.ElemTexts)))
		w(s.ElemTexts...)
		if s.Decl == "" {
			w(s.Spec())
		}
	}
	for i := range t.Objects {
		w("object", t.Objects[i].Name, t.Objects[i].Decl)
	}
	names := make([]string, 0, len(links))
	for n := range links {
		if nftcompile.DeclaresName(t, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w("link", n, strconv.Itoa(links[n]))
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// compiledDecls are a table's declarations as nft compiled them.
type compiledDecls struct {
	sets map[string]*model.NftRawSet
	objs map[string]*model.NftRawObj
}

// linkIndexes are the namespace's links by name: rules that name a link
// (iif, oif) compile to its index.
func linkIndexes(act *model.State) map[string]int {
	out := make(map[string]int, len(act.Links))
	for name, l := range act.Links {
		if l != nil && l.Index > 0 {
			out[name] = l.Index
		}
	}
	return out
}

// resolveRules gives each declared rule its key and, where it can, its
// fingerprint, before the diff: from the memo of this engine's compiles,
// from an intact kernel rule of the same key (the kernel holds what the
// text compiles to: no nft needed), or by compiling with nft the rules the
// kernel does not hold. The sets and objects nft declares are compiled
// with them (or taken from the memo). A rule nft refuses fails the plan
// with nft's error at the rule's place in the file, but for the tables it
// returns, with the reason each waits: those whose rules nft could not
// compile because they name a declared link the kernel does not have yet
// (waitingFor), and the plan leaves as they are until it is made.
func (e *Engine) resolveRules(desired, act *model.State) (map[model.NftTableKey]string, error) {
	c := e.compiler()
	if n, ok := c.(*nftcompile.Nft); ok {
		// A Prestart's nft is for this pass's compile only.
		defer n.DropSpare()
	}
	if !hasRules(desired) {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	version, err := e.nftVersion(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("nftables rules: %w", err)
	}
	links := linkIndexes(act)
	missing := missingLinks(desired, links)
	waiting := map[*model.NftTable]string{}
	intact := map[model.NftTableKey]map[string]string{}
	for i := range act.NFTables {
		t := &act.NFTables[i]
		m := make(map[string]string, ruleCount(t))
		for j := range t.Chains {
			for _, r := range t.Chains[j].Rules {
				if r.Intact() && r.Key != "" {
					m[r.Key] = r.Fingerprint
				}
			}
		}
		intact[t.Key()] = m
	}
	memo := make(map[string]*model.NftCompiled, len(e.compiled))
	declMemo := map[string]*compiledDecls{}
	req := &nftcompile.Request{Links: links}
	declKeys := map[*model.NftTable]string{}
	n := 0
	for i := range desired.NFTables {
		n += ruleCount(&desired.NFTables[i])
	}
	e.ruleKeys.Begin(n)
	for i := range desired.NFTables {
		t := &desired.NFTables[i]
		if why := deviceWaits(t, missing); why != "" {
			waiting[t] = why
			continue
		}
		tctx := nftcompile.TableContext(version, t, links)
		if hasDecls(t) {
			k := declKey(version, t, links)
			if cd := e.compiledDecls[k]; cd != nil {
				for j := range t.Sets {
					if t.Sets[j].Decl != "" {
						t.Sets[j].Raw = cd.sets[t.Sets[j].Name]
					}
				}
				for j := range t.Objects {
					t.Objects[j].Raw = cd.objs[t.Objects[j].Name]
				}
				declMemo[k] = cd
			} else {
				declKeys[t] = k
				req.Decls = append(req.Decls, t)
			}
		}
		for j := range t.Chains {
			ch := &t.Chains[j]
			for k := range ch.Rules {
				r := &ch.Rules[k]
				r.Key = e.ruleKeys.Key(tctx, version, t, ch, r.Text, links)
				switch comp, fp := e.compiled[r.Key], intact[t.Key()][r.Key]; {
				case comp != nil:
					r.Compiled, r.Fingerprint = comp, comp.Fingerprint
					memo[r.Key] = comp
				case fp != "":
					r.Compiled, r.Fingerprint = nil, fp
				default:
					r.Compiled, r.Fingerprint = nil, ""
					req.Rules = append(req.Rules, nftcompile.Rule{Table: t, Chain: ch, Rule: r})
				}
			}
		}
	}
	for _, t := range graphContext(req) {
		if _, ok := declKeys[t]; !ok && hasDecls(t) && !slices.Contains(req.Decls, t) {
			declKeys[t] = declKey(version, t, links)
			req.Decls = append(req.Decls, t)
		}
	}
	err = e.compile(ctx, c, req, memo)
	var refused nftcompile.Errors
	if errors.As(err, &refused) && len(missing) > 0 {
		if err = e.compileWithout(ctx, c, req, memo, missing, waiting, err); err != nil {
			return nil, err
		}
		for t := range waiting {
			delete(declKeys, t)
		}
	}
	if err != nil {
		return nil, err
	}
	for t, k := range declKeys {
		cd := &compiledDecls{sets: map[string]*model.NftRawSet{}, objs: map[string]*model.NftRawObj{}}
		for j := range t.Sets {
			if t.Sets[j].Decl != "" {
				cd.sets[t.Sets[j].Name] = t.Sets[j].Raw
			}
		}
		for j := range t.Objects {
			cd.objs[t.Objects[j].Name] = t.Objects[j].Raw
		}
		declMemo[k] = cd
	}
	// Only this pass's keys are remembered: a daemon's memo follows the
	// file instead of growing with every text it ever held.
	e.compiled, e.compiledDecls = memo, declMemo
	e.listedAlike(ctx, c, desired, act)
	if len(waiting) == 0 {
		return nil, nil
	}
	out := make(map[model.NftTableKey]string, len(waiting))
	for t, why := range waiting {
		out[t.Key()] = why
	}
	return out, nil
}

// missingLinks are the links the file declares that the kernel does not
// have (links: the kernel's, by name): nft resolves a link's name to its
// index when it compiles iif, oif, meta iif and oif, fib's oif, an
// iface_index set's elements, fwd and dup, and refuses a name no link has.
// Such a rule can only be compiled once the plan has made its link.
func missingLinks(desired *model.State, links map[string]int) []string {
	var out []string
	for name := range desired.Links {
		if _, ok := links[name]; !ok {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// waitingFor is why a table waits for the first of missing its text names.
func waitingFor(name string) string {
	return fmt.Sprintf("waits for link %s, which its rules name: compiled once the link exists", name)
}

// waitForNewIndexes returns waiting with the tables added whose rules or
// declarations name a link that the plan makes under a name the kernel
// holds now (a link replaced, or one made where another is renamed away),
// or whose netdev chain hooks such a link, or nil when there are none.
// Such a link gets another index, and their rules were compiled to the
// index it has now: written as they are, iif and oif would name an index
// no link has after the plan, and the next pass would write them again.
// A kernel before 6.16 deletes a netdev base chain, rules and all, with
// the last device it hooks, so the chain the plan leaves as it is would
// be gone after the apply. They wait, as for a link the kernel lacks, and
// the same apply compiles and writes them once the link is made.
func waitForNewIndexes(desired, act *model.State, plan *diff.Plan, waiting map[model.NftTableKey]string) map[model.NftTableKey]string {
	var renewed []string
	for i := range plan.Ops {
		op := &plan.Ops[i]
		if op.Kind != diff.KindLink || (op.Action != diff.Replace && op.Action != diff.Create) {
			continue
		}
		if l := act.Links[op.ID]; l != nil && l.Index > 0 {
			renewed = append(renewed, op.ID)
		}
	}
	if len(renewed) == 0 {
		return nil
	}
	sort.Strings(renewed)
	var out map[model.NftTableKey]string
	for i := range desired.NFTables {
		t := &desired.NFTables[i]
		k := t.Key()
		if waiting[k] != "" {
			continue
		}
		why := ""
		if name := hookedIn(t, renewed); name != "" {
			why = fmt.Sprintf("waits for link %s, which a netdev chain of it hooks and this plan makes again: written once the link exists", name)
		} else if name := namedIn(t, renewed); name != "" {
			why = fmt.Sprintf("waits for link %s, which its rules name and this plan makes again: compiled to its new index once it exists", name)
		} else {
			continue
		}
		if out == nil {
			out = make(map[model.NftTableKey]string, len(waiting)+1)
			for k, why := range waiting {
				out[k] = why
			}
		}
		out[k] = why
	}
	return out
}

// hookedIn returns the first of names that a netdev chain of t hooks, or "".
func hookedIn(t *model.NftTable, names []string) string {
	for i := range t.Chains {
		if d := t.Chains[i].Device; d != "" && slices.Contains(names, d) {
			return d
		}
	}
	return ""
}

// namedIn returns the first of names that a rule, set or object of t names
// (namedMissing), or "".
func namedIn(t *model.NftTable, names []string) string {
	for i := range t.Chains {
		for _, r := range t.Chains[i].Rules {
			if n := namedMissing(r.Text, names); n != "" {
				return n
			}
		}
	}
	for i := range t.Sets {
		s := &t.Sets[i]
		if s.Decl == "" {
			continue
		}
		for _, text := range append([]string{s.Decl}, s.ElemTexts...) {
			if n := namedMissing(text, names); n != "" {
				return n
			}
		}
	}
	for i := range t.Objects {
		if n := namedMissing(t.Objects[i].Decl, names); n != "" {
			return n
		}
	}
	return ""
}

// deviceWaits says why a table waits when a netdev chain of it hooks a
// declared link the kernel does not have yet (before 6.16 the kernel
// refuses such a chain; the wait costs nothing where it takes it).
func deviceWaits(t *model.NftTable, missing []string) string {
	for i := range t.Chains {
		if d := t.Chains[i].Device; d != "" && slices.Contains(missing, d) {
			return waitingFor(d)
		}
	}
	return ""
}

// namedMissing returns the first of missing that text names as a word of
// its own (a link name's characters on neither side), or "".
func namedMissing(text string, missing []string) string {
	for _, name := range missing {
		for i := 0; ; {
			j := strings.Index(text[i:], name)
			if j < 0 {
				break
			}
			j += i
			end := j + len(name)
			if (j == 0 || !nameByte(text[j-1])) && (end == len(text) || !nameByte(text[end])) {
				return name
			}
			i = j + 1
		}
	}
	return ""
}

// nameByte reports whether b may continue a link's name in nft's text.
func nameByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-' || b == '.'
}

// compileWithout handles a compile nft refused (err) where the file declares
// links the kernel does not have. The tables of the refused rules and
// declarations wait (added to waiting) when the refusals came of those
// links: each refused text names one, or the request compiles with
// stand-ins for them (a rule of a set nft refused for its element is
// refused too, and names no link); what nft took of the other tables is
// set (Compiler.Compile) and remembered. Otherwise the file has an error
// of its own, said as validate says it: from the compile with stand-ins,
// whose bytes are never used.
func (e *Engine) compileWithout(ctx context.Context, c nftcompile.Compiler, req *nftcompile.Request, memo map[string]*model.NftCompiled, missing []string, waiting map[*model.NftTable]string, err error) error {
	why := map[*model.NftTable]string{}
	var refused []*model.NftTable
	other := false
	note := func(t *model.NftTable, texts ...string) {
		if !slices.Contains(refused, t) {
			refused = append(refused, t)
		}
		for _, text := range texts {
			if name := namedMissing(text, missing); name != "" {
				if why[t] == "" {
					why[t] = waitingFor(name)
				}
				return
			}
		}
		other = true
	}
	for _, r := range req.Rules {
		if r.Rule.Compiled == nil {
			note(r.Table, r.Rule.Text)
		}
	}
	for _, t := range req.Decls {
		for i := range t.Sets {
			if s := &t.Sets[i]; s.Decl != "" && s.Raw == nil {
				note(t, append([]string{s.Decl}, s.ElemTexts...)...)
			}
		}
		for i := range t.Objects {
			if o := &t.Objects[i]; o.Raw == nil {
				note(t, o.Decl)
			}
		}
	}
	if len(why) == 0 {
		return err
	}
	if other {
		restore := keepCompiled(req)
		aerr := c.Compile(ctx, &nftcompile.Request{Decls: req.Decls, Rules: req.Rules, Links: withStandIns(req.Links, missing)})
		restore()
		if aerr != nil {
			return aerr
		}
	}
	for _, t := range refused {
		if why[t] == "" {
			why[t] = waitingFor(strings.Join(missing, ", "))
		}
		waiting[t] = why[t]
	}
	for _, r := range req.Rules {
		if r.Rule.Compiled != nil && waiting[r.Table] == "" {
			memo[r.Rule.Key] = r.Rule.Compiled
		}
	}
	return nil
}

// keepCompiled saves what a compile sets on a request's rules and
// declarations, and returns the function that puts it back.
func keepCompiled(req *nftcompile.Request) (restore func()) {
	type rule struct {
		c  *model.NftCompiled
		fp string
	}
	rules := make([]rule, len(req.Rules))
	for i, r := range req.Rules {
		rules[i] = rule{r.Rule.Compiled, r.Rule.Fingerprint}
	}
	var sets []*model.NftRawSet
	var objs []*model.NftRawObj
	for _, t := range req.Decls {
		for i := range t.Sets {
			sets = append(sets, t.Sets[i].Raw)
		}
		for i := range t.Objects {
			objs = append(objs, t.Objects[i].Raw)
		}
	}
	return func() {
		for i, r := range req.Rules {
			r.Rule.Compiled, r.Rule.Fingerprint = rules[i].c, rules[i].fp
		}
		si, oi := 0, 0
		for _, t := range req.Decls {
			for i := range t.Sets {
				t.Sets[i].Raw = sets[si]
				si++
			}
			for i := range t.Objects {
				t.Objects[i].Raw = objs[oi]
				oi++
			}
		}
	}
}

// withStandIns returns links with an index for each of missing, above
// every other: a name nft can resolve where only what it makes of the
// rest matters.
func withStandIns(links map[string]int, missing []string) map[string]int {
	next := 0
	for _, idx := range links {
		next = max(next, idx)
	}
	out := maps.Clone(links)
	if out == nil {
		out = map[string]int{}
	}
	for _, name := range missing {
		if _, ok := out[name]; !ok {
			next++
			out[name] = next
		}
	}
	return out
}

// nftVersion is the compiler's version; nft's is kept in the state
// directory (nftcompile.VersionCached), written only by a writer.
func (e *Engine) nftVersion(ctx context.Context, c nftcompile.Compiler) (string, error) {
	if n, ok := c.(*nftcompile.Nft); ok && e.State != nil {
		return n.VersionCached(ctx, e.State, e.Ledger == nil || !e.Ledger.ReadOnly)
	}
	return c.Version(ctx)
}

// compile compiles a request and remembers its rules by key.
func (e *Engine) compile(ctx context.Context, c nftcompile.Compiler, req *nftcompile.Request, memo map[string]*model.NftCompiled) error {
	if req.Empty() {
		return nil
	}
	if err := c.Compile(ctx, req); err != nil {
		return err
	}
	for _, r := range req.Rules {
		if r.Rule.Compiled != nil {
			memo[r.Rule.Key] = r.Rule.Compiled
		}
	}
	return nil
}

// compileWrites compiles the rules a plan writes that were resolved from the
// kernel without nft (a rule moved, or declared twice): a write sends the
// bytecode as nft compiled it, never as the kernel holds it (with its
// counters' values).
func (e *Engine) compileWrites(plan *diff.Plan, desired, act *model.State) error {
	tables := map[model.NftTableKey]*model.NftTable{}
	for i := range desired.NFTables {
		tables[desired.NFTables[i].Key()] = &desired.NFTables[i]
	}
	var need []nftcompile.Rule
	seen := map[*model.NftRule]bool{}
	for i := range plan.Ops {
		for _, n := range plan.Ops[i].NFT {
			if n.Rule == nil || n.Rule.Compiled != nil || seen[n.Rule] || (n.Op != model.NftAddRule && n.Op != model.NftReplaceRule) {
				continue
			}
			seen[n.Rule] = true
			t := tables[n.Table]
			if t == nil || n.Chain == nil {
				return fmt.Errorf("nftables rule %q: its table %s is not declared", n.Rule.Text, n.Table)
			}
			need = append(need, nftcompile.Rule{Table: t, Chain: n.Chain, Rule: n.Rule})
		}
	}
	if len(need) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	if e.compiled == nil {
		e.compiled = map[string]*model.NftCompiled{}
	}
	req := &nftcompile.Request{Rules: need, Links: linkIndexes(act)}
	for _, t := range graphContext(req) {
		if hasDecls(t) {
			req.Decls = append(req.Decls, t)
		}
	}
	return e.compile(ctx, e.compiler(), req, e.compiled)
}

// graphContext adds to a request, for each table it compiles rules or
// declarations of whose rules jump or go to chains, the rules that make
// its chain graph: every rule that jumps or goes to a chain, by itself or
// through a verdict map, and every rule of a regular chain; and returns
// those tables, whose declarations are to be compiled too, with their
// elements (a verdict map's jumps are edges). The kernel validates a
// table's chain graph, each chain reached from a base chain against that
// chain's hook and type (a masquerade reached from prerouting, a fib oif
// from output, a loop), and nft refuses what the kernel would only when it
// sees the graph: the rules that changed alone are not enough. A base
// chain's other rules are judged by their own chain, which the script
// declares, and stay out (a change among 1,000 rules of an input chain
// compiles the graph, not the 1,000); so do the rules of a table without
// jumps.
func graphContext(req *nftcompile.Request) []*model.NftTable {
	tables := slices.Clone(req.Decls) // a verdict map's new element is an edge too
	for _, r := range req.Rules {
		if !slices.Contains(tables, r.Table) {
			tables = append(tables, r.Table)
		}
	}
	var out []*model.NftTable
	for _, t := range tables {
		if jumps(t) {
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		return nil
	}
	// Those tables' rules in the file's order, as nft -f of the table
	// would add them: which rule of a bad graph the kernel refuses
	// depends on the order.
	pending := map[*model.NftRule]bool{}
	for _, r := range req.Rules {
		pending[r.Rule] = true
	}
	verdictMaps := map[*model.NftTable][]string{}
	for _, t := range out {
		verdictMaps[t] = jumpingMaps(t)
	}
	rules := slices.DeleteFunc(req.Rules, func(r nftcompile.Rule) bool { return slices.Contains(out, r.Table) })
	for _, t := range out {
		for j := range t.Chains {
			ch := &t.Chains[j]
			for k := range ch.Rules {
				r := &ch.Rules[k]
				if pending[r] || !ch.Base() || edge(r.Text, verdictMaps[t]) {
					rules = append(rules, nftcompile.Rule{Table: t, Chain: ch, Rule: r})
				}
			}
		}
	}
	req.Rules = rules
	return out
}

// edge reports whether a rule may jump or go to a chain: by its words (a
// comment that says jump only costs a compile), or a verdict map of maps
// that jumps.
func edge(text string, maps []string) bool {
	if strings.Contains(text, "jump") || strings.Contains(text, "goto") {
		return true
	}
	for _, m := range maps {
		if strings.Contains(text, "@"+m) {
			return true
		}
	}
	return false
}

// jumpingMaps are a table's verdict maps whose elements jump or go to a
// chain.
func jumpingMaps(t *model.NftTable) []string {
	var out []string
	for i := range t.Sets {
		s := &t.Sets[i]
		if !s.Map || !strings.Contains(s.Decl, "verdict") {
			continue
		}
		if slices.ContainsFunc(s.ElemTexts, func(e string) bool { return strings.Contains(e, "jump") || strings.Contains(e, "goto") }) {
			out = append(out, s.Name)
		}
	}
	return out
}

// jumps reports whether a table's rules may jump or go to a chain.
func jumps(t *model.NftTable) bool {
	maps := jumpingMaps(t)
	for j := range t.Chains {
		for _, r := range t.Chains[j].Rules {
			if edge(r.Text, maps) {
				return true
			}
		}
	}
	return false
}

// CompileAll compiles every rule of a configuration with c (nil: the
// default), as validate does: nothing is taken from a kernel, every rule
// goes through nft. links are the names and indexes of the links rules may
// name (iif, oif); a link the file declares that is not among them compiles
// against a stand-in index, above the others': the apply makes it before it
// compiles the rules that name it (resolveRules), so only a name neither
// declared nor there is nft's error. nft's refusals come back as an
// nftcompile.Errors.
func CompileAll(ctx context.Context, c nftcompile.Compiler, desired *model.State, links map[string]int) error {
	if !hasRules(desired) {
		return nil
	}
	if missing := missingLinks(desired, links); len(missing) > 0 {
		links = withStandIns(links, missing)
	}
	if c == nil {
		c = DefaultCompiler
	}
	version, err := c.Version(ctx)
	if err != nil {
		return fmt.Errorf("nftables rules: %w", err)
	}
	req := &nftcompile.Request{Links: links}
	for i := range desired.NFTables {
		t := &desired.NFTables[i]
		if hasDecls(t) {
			req.Decls = append(req.Decls, t)
		}
		for j := range t.Chains {
			ch := &t.Chains[j]
			for k := range ch.Rules {
				r := &ch.Rules[k]
				r.Key = nftcompile.Key(version, t, ch, r.Text, links)
				req.Rules = append(req.Rules, nftcompile.Rule{Table: t, Chain: ch, Rule: r})
			}
		}
	}
	return c.Compile(ctx, req)
}
