package engine

import (
	"context"
	"fmt"
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

func (e *Engine) compiler() nftcompile.Compiler {
	if e.Compiler != nil {
		return e.Compiler
	}
	if k, ok := e.Kernel.(compilerOf); ok {
		return k.NFTCompiler()
	}
	return DefaultCompiler
}

// hasRules reports whether the state declares any nftables rule.
func hasRules(st *model.State) bool {
	for i := range st.NFTables {
		for j := range st.NFTables[i].Chains {
			if len(st.NFTables[i].Chains[j].Rules) > 0 {
				return true
			}
		}
	}
	return false
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
// kernel does not hold. A rule nft refuses fails the plan with nft's error
// at the rule's place in the file.
func (e *Engine) resolveRules(desired, act *model.State) error {
	if !hasRules(desired) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), compileTimeout)
	defer cancel()
	c := e.compiler()
	version, err := c.Version(ctx)
	if err != nil {
		return fmt.Errorf("nftables rules: %w", err)
	}
	links := linkIndexes(act)
	intact := map[model.NftTableKey]map[string]string{}
	for i := range act.NFTables {
		t := &act.NFTables[i]
		m := map[string]string{}
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
	var need []nftcompile.Rule
	for i := range desired.NFTables {
		t := &desired.NFTables[i]
		for j := range t.Chains {
			ch := &t.Chains[j]
			for k := range ch.Rules {
				r := &ch.Rules[k]
				r.Key = nftcompile.Key(version, t, ch, r.Text, links)
				switch comp, fp := e.compiled[r.Key], intact[t.Key()][r.Key]; {
				case comp != nil:
					r.Compiled, r.Fingerprint = comp, comp.Fingerprint
					memo[r.Key] = comp
				case fp != "":
					r.Compiled, r.Fingerprint = nil, fp
				default:
					r.Compiled, r.Fingerprint = nil, ""
					need = append(need, nftcompile.Rule{Table: t, Chain: ch, Rule: r})
				}
			}
		}
	}
	if err := e.compile(ctx, c, need, links, memo); err != nil {
		return err
	}
	// Only this pass's keys are remembered: a daemon's memo follows the
	// file instead of growing with every text it ever held.
	e.compiled = memo
	return nil
}

// compile compiles rules and remembers them by key.
func (e *Engine) compile(ctx context.Context, c nftcompile.Compiler, rules []nftcompile.Rule, links map[string]int, memo map[string]*model.NftCompiled) error {
	if len(rules) == 0 {
		return nil
	}
	if err := c.Compile(ctx, rules, links); err != nil {
		return err
	}
	for _, r := range rules {
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
	return e.compile(ctx, e.compiler(), need, linkIndexes(act), e.compiled)
}
