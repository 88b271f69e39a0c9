package engine

import (
	"context"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// chainPair is a chain's declared rules that match no kernel rule of it by
// bytecode, and its kernel rules that match no declared one.
type chainPair struct {
	table       *model.NftTable
	chain       string
	want, unmet []*model.NftRule // declared rules unmatched; kernel rules unmatched
}

// ruleForms is a kernel that reads a rule's dependency-free form
// (nftwire.DependencyFree) by its handle.
type ruleForms interface {
	NFTRuleDependencyFree(key model.NftTableKey, chain string, handle uint64) ([]byte, bool, error)
}

// inNamespace is a kernel that can run a program in its namespace.
type inNamespace interface {
	InNamespace(f func() error) error
}

// listedAlike gives a declared rule the fingerprint of a kernel rule of its
// chain that nft lists as exactly the rule's text, when their bytecode
// differs: nft judges them the same rule, and the rule is kept.
//
// nft's listing of a rule does not always read back to its bytecode: it
// leaves out a match it takes for the dependency of the next one, and
// compiling the shorter text puts back its own, which may be another
// (`ip protocol tcp tcp dport 22` in an ip table lists as `tcp dport 22`,
// which compiles to `meta l4proto tcp`; `meta l4proto icmp icmp type
// echo-request` in an inet table lists as `icmp type echo-request`, which
// adds `meta nfproto ipv4`). show prints rules as nft lists them, and its
// output, applied, must change nothing; without this, each such rule
// would be rewritten, and an apply of a file written from nft's listing
// never settles on the rules nft -f wrote.
//
// Only rules that match no kernel rule of their chain by bytecode are
// looked at, against the kernel rules that match no declared rule, so a
// pass that changes nothing lists nothing. The kernel rules are listed by
// nft in the kernel's namespace; a kernel that cannot run nft there (a
// fake), or a listing that fails, leaves the rules to their bytecode. What
// was judged alike is remembered by the declared rule's key and the kernel
// rule's fingerprint, so the daemon lists such a rule once, not at every
// pass.
func (e *Engine) listedAlike(ctx context.Context, c nftcompile.Compiler, desired, act *model.State) {
	var pairs []chainPair
	kernel := make(map[model.NftTableKey]*model.NftTable, len(act.NFTables))
	for i := range act.NFTables {
		kernel[act.NFTables[i].Key()] = &act.NFTables[i]
	}
	for i := range desired.NFTables {
		t := &desired.NFTables[i]
		at := kernel[t.Key()]
		if at == nil {
			continue
		}
		for j := range t.Chains {
			ch := &t.Chains[j]
			hc := at.Chain(ch.Name)
			if hc == nil || len(ch.Rules) == 0 || len(hc.Rules) == 0 {
				continue
			}
			have := make(map[string]bool, len(hc.Rules))
			for k := range hc.Rules {
				have[hc.Rules[k].Fingerprint] = true
			}
			want := make(map[string]bool, len(ch.Rules))
			var p chainPair
			for k := range ch.Rules {
				r := &ch.Rules[k]
				want[r.Fingerprint] = true
				if r.Fingerprint != "" && !have[r.Fingerprint] {
					p.want = append(p.want, r)
				}
			}
			if len(p.want) == 0 {
				continue
			}
			for k := range hc.Rules {
				if !want[hc.Rules[k].Fingerprint] {
					p.unmet = append(p.unmet, &hc.Rules[k])
				}
			}
			if len(p.unmet) > 0 {
				p.table, p.chain = at, ch.Name
				pairs = append(pairs, p)
			}
		}
	}
	memo := map[string]string{}
	defer func() { e.listedAs = memo }()
	if len(pairs) == 0 {
		return
	}
	// alias pairs each declared rule left with an unused kernel rule of
	// its chain that judge finds alike, and returns how many are left.
	alias := func(p *chainPair, judge func(d, k *model.NftRule) bool) (left int) {
		kept := p.want[:0]
		for _, d := range p.want {
			found := false
			for x, k := range p.unmet {
				if k != nil && judge(d, k) {
					d.Fingerprint = k.Fingerprint
					memo[d.Key] = k.Fingerprint
					p.unmet[x] = nil
					found = true
					break
				}
			}
			if !found {
				kept = append(kept, d)
			}
		}
		p.want = kept
		return len(kept)
	}
	left := 0
	for i := range pairs {
		left += alias(&pairs[i], func(d, k *model.NftRule) bool {
			return e.listedAs[d.Key] != "" && e.listedAs[d.Key] == k.Fingerprint
		})
	}
	n, ok := c.(*nftcompile.Nft)
	ns, nsOK := e.Kernel.(inNamespace)
	if left == 0 || !ok || !nsOK {
		return
	}
	if left = e.mayListAlike(pairs); left == 0 {
		return
	}
	var out string
	if err := ns.InNamespace(func() error {
		var err error
		out, err = n.List(ctx)
		return err
	}); err != nil {
		return
	}
	listings := map[*model.NftTable]*nftcompile.Listing{}
	for i := range pairs {
		p := &pairs[i]
		l := listings[p.table]
		if l == nil {
			l = nftcompile.ParseListing(out, p.table.Family, p.table.Name)
			listings[p.table] = l
		}
		rules := l.Rules[p.chain]
		alias(p, func(d, k *model.NftRule) bool {
			text, ok := rules[k.Handle]
			return ok && text != "" && text == strings.TrimSpace(d.Text)
		})
	}
}

// mayListAlike keeps, of each chain's unmatched declared rules, those that
// nft could list as one of the chain's unmatched kernel rules: those whose
// bytecode is the kernel rule's but for protocol dependencies
// (nftwire.DependencyFree), the only matches nft leaves out of a listing.
// A change of one rule among a thousand (another port) is then judged
// without listing the ruleset, which costs about what nft -f of the change
// does. A rule whose form cannot be had (not compiled here, a kernel that
// reads no forms) stays, for the listing to judge. It returns how many
// stay.
func (e *Engine) mayListAlike(pairs []chainPair) (left int) {
	k, ok := e.Kernel.(ruleForms)
	for i := range pairs {
		p := &pairs[i]
		if !ok {
			left += len(p.want)
			continue
		}
		forms := make(map[string]bool, len(p.unmet))
		unknown := false
		for _, r := range p.unmet {
			if r == nil {
				continue
			}
			f, found, err := k.NFTRuleDependencyFree(p.table.Key(), p.chain, r.Handle)
			switch {
			case err != nil:
				unknown = true
			case found:
				forms[string(f)] = true
			}
		}
		kept := p.want[:0]
		for _, d := range p.want {
			f, known := declaredForm(d)
			if unknown || !known || forms[string(f)] {
				kept = append(kept, d)
			}
		}
		p.want = kept
		left += len(kept)
	}
	return left
}

// declaredForm is a compiled declared rule's dependency-free form, its
// anonymous sets named by their order of reference as the kernel's are.
func declaredForm(d *model.NftRule) ([]byte, bool) {
	if d.Compiled == nil {
		return nil, false
	}
	refs, err := nftwire.ReferencedSets(d.Compiled.Exprs)
	if err != nil {
		return nil, false
	}
	var anon []string
	for _, n := range refs {
		for _, s := range d.Compiled.Sets {
			if s.Name == n {
				anon = append(anon, n)
				break
			}
		}
	}
	f, err := nftwire.DependencyFree(d.Compiled.Exprs, anon)
	return f, err == nil
}
