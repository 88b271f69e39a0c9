package nftcompile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// Compiler compiles rules: the real one runs nft (Nft), tests of the
// stages above use a fake (kerneltest).
type Compiler interface {
	// Compile compiles each rule in the context of its table (whose
	// declarations it reads; its rules it does not) and sets the rule's
	// Compiled and Fingerprint. links are the names and indexes of the
	// namespace's links, for rules that name one (iif, oif). When nft
	// refuses a rule or a declaration, the error is an Errors, with nft's
	// message for each, and rules it took are still set; any other error
	// means nft could not be run at all.
	Compile(ctx context.Context, rules []Rule, links map[string]int) error
	// Version says which nft compiles: it is part of every rule's key, so
	// that another nft compiles the rules again.
	Version(ctx context.Context) (string, error)
}

// DefaultNft is where Debian's nftables package puts nft.
const DefaultNft = "/usr/sbin/nft"

// Nft is the Compiler that runs nft.
type Nft struct {
	// Path is the program: never looked up in $PATH (whoever writes the
	// file may change the firewall, not choose a program run as root).
	Path string

	once    sync.Once
	version string
	verr    error
}

// maxRuns bounds the runs of nft for one Compile: each run that fails drops
// the rules and declarations nft placed its errors at, and runs again.
const maxRuns = 32

// ErrNoNft says nft is not installed.
var ErrNoNft = errors.New("nft is not installed (Debian package nftables): it compiles the file's nftables rules")

func (n *Nft) path() string {
	if n.Path == "" {
		return DefaultNft
	}
	return n.Path
}

// Version runs `nft --version` once.
func (n *Nft) Version(ctx context.Context) (string, error) {
	n.once.Do(func() {
		out, err := exec.CommandContext(ctx, n.path(), "--version").Output()
		switch {
		case errors.Is(err, exec.ErrNotFound), isNotExist(err):
			n.verr = fmt.Errorf("%w (%s: not found)", ErrNoNft, n.path())
		case err != nil:
			n.verr = fmt.Errorf("%s --version: %w", n.path(), err)
		default:
			n.version = strings.TrimSpace(string(out))
		}
	})
	return n.version, n.verr
}

// Compile compiles the rules with nft in a namespace of their own.
func (n *Nft) Compile(ctx context.Context, rules []Rule, links map[string]int) error {
	if len(rules) == 0 {
		return nil
	}
	if _, err := n.Version(ctx); err != nil {
		return err
	}
	pending := make([]int, len(rules))
	for i := range rules {
		pending[i] = i
	}
	var errs Errors
	badTable := map[*model.NftTable]bool{}
	renamed := map[*model.NftTable]map[string]string{}
	for runs := 0; len(pending) > 0; runs++ {
		if runs == maxRuns {
			return fmt.Errorf("compile nftables rules: nft still refused some after %d runs", maxRuns)
		}
		s, chains := build(rules, pending, renamed)
		in := &helperIn{Nft: n.path(), Script: s.text.String(), Links: usedLinks(rules, pending, links)}
		for ti, t := range s.tables {
			in.Tables = append(in.Tables, helperTable{t.Family, tableName(ti)})
		}
		out, err := run(ctx, in)
		if err != nil {
			return err
		}
		if !out.Refused {
			errs = append(errs, take(rules, s, chains, out.Dumps)...)
			break
		}
		nes := parseErrors(out.Stderr)
		drop := map[int]bool{}
		var unplaced []string
		rename := false
		for _, e := range nes {
			if e.Line <= 0 || e.Line > len(s.lines) {
				unplaced = append(unplaced, e.Msg)
				continue
			}
			o := s.lines[e.Line-1]
			t := s.tables[o.table]
			if o.what == "rule" && e.Col-1 >= o.prefix {
				r := rules[o.rule].Rule
				if !drop[o.rule] {
					errs = append(errs, Error{Pos: r.Source.At(e.Col - 1 - o.prefix), Path: r.Source.Path(), Msg: e.Msg})
				}
				drop[o.rule] = true
				continue
			}
			if o.what == "chain" && renamed[t][o.name] == "" {
				// A name nft cannot write: the chain's rules compile as
				// well in a chain named otherwise.
				if renamed[t] == nil {
					renamed[t] = map[string]string{}
				}
				renamed[t][o.name] = fmt.Sprintf("%s_c%d", tableName(o.table), len(renamed[t]))
				rename = true
				continue
			}
			if !badTable[t] {
				errs = append(errs, declError(t, o, e.Msg))
			}
			badTable[t] = true
		}
		kept := pending[:0]
		for _, i := range pending {
			if !drop[i] && !badTable[rules[i].Table] {
				kept = append(kept, i)
			}
		}
		if len(kept) == len(pending) && !rename {
			// nft placed no error: nothing to drop, and the same run
			// would fail again. Each table of the run gets the message.
			msg := strings.Join(unplaced, "; ")
			if msg == "" {
				msg = strings.TrimSpace(out.Stderr)
			}
			for _, t := range s.tables {
				errs = append(errs, Error{Pos: t.Origin, Path: "nftables." + t.Key().String(), Msg: "nft: " + msg})
			}
			break
		}
		pending = kept
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return errs
	}
	return nil
}

// declError places nft's error at a declaration of a table.
func declError(t *model.NftTable, o origin, msg string) Error {
	path := "nftables." + t.Key().String()
	pos := t.Origin
	switch o.what {
	case "chain":
		path += ".chains." + o.name
		if c := t.Chain(o.name); c != nil {
			pos = c.Origin
		}
	case "set":
		path += ".sets." + o.name
		if s := t.Set(o.name); s != nil {
			pos = s.Origin
		}
	}
	return Error{Pos: pos, Path: path, Msg: msg}
}

// chainKey names a chain of a script's table.
type chainKey struct {
	table int
	chain string
}

// build writes the script of the pending rules: their tables' declarations,
// then the rules. chains lists, for each chain, its rules in order.
func build(rules []Rule, pending []int, renamed map[*model.NftTable]map[string]string) (*script, map[chainKey][]int) {
	s := &script{renamed: renamed}
	index := map[*model.NftTable]int{}
	chains := map[chainKey][]int{}
	for _, i := range pending {
		t := rules[i].Table
		if _, ok := index[t]; !ok {
			index[t] = len(s.tables)
			s.declare(t)
		}
	}
	for _, i := range pending {
		r := rules[i]
		ti := index[r.Table]
		s.rule(ti, r.Chain.Name, i, r.Rule.Text)
		k := chainKey{ti, s.chainName(r.Table, r.Chain.Name)}
		chains[k] = append(chains[k], i)
	}
	return s, chains
}

// take sets the rules from the dumps of a run nft took whole.
func take(rules []Rule, s *script, chains map[chainKey][]int, dumps []*nftwire.TableDump) Errors {
	var errs Errors
	for ti, d := range dumps {
		t := s.tables[ti]
		got := map[string][]*nftwire.Rule{}
		for i := range d.Rules {
			r := &d.Rules[i]
			got[r.Chain] = append(got[r.Chain], r)
		}
		for k, want := range chains {
			if k.table != ti {
				continue
			}
			have := got[k.chain]
			if len(have) != len(want) {
				// nft makes one rule of one `add rule`: anything else
				// is not what this package knows.
				for _, i := range want {
					r := rules[i].Rule
					errs = append(errs, Error{Pos: r.Source.At(0), Path: r.Source.Path(),
						Msg: fmt.Sprintf("nft made %d rules of chain %s's %d", len(have), k.chain, len(want))})
				}
				continue
			}
			for j, i := range want {
				r := rules[i].Rule
				c, _, err := nftwire.Compile(have[j], func(name string) (*nftwire.Set, [][]byte) {
					return d.Set(name), d.Elems[name]
				})
				if err != nil {
					errs = append(errs, Error{Pos: r.Source.At(0), Path: r.Source.Path(), Msg: fmt.Sprintf("read what nft compiled: %v", err)})
					continue
				}
				if name := implicitSet(have[j], d, t); name != "" {
					errs = append(errs, Error{Pos: r.Source.At(0), Path: r.Source.Path(),
						Msg: fmt.Sprintf("the rule makes set %s, which the file does not declare (a meter): declare it under sets and use \"update @%s { … }\"", name, name)})
					continue
				}
				r.Compiled, r.Fingerprint = c, c.Fingerprint
			}
		}
	}
	return errs
}

// implicitSet returns the name of a named set a rule refers to that its
// table does not declare: nft makes such a set for a meter.
func implicitSet(r *nftwire.Rule, d *nftwire.TableDump, t *model.NftTable) string {
	refs, err := nftwire.ReferencedSets(r.Exprs)
	if err != nil {
		return ""
	}
	for _, n := range refs {
		if s := d.Set(n); s != nil && !s.Anonymous() && t.Set(n) == nil {
			return n
		}
	}
	return ""
}

// usedLinks returns the links whose names the pending rules' texts hold.
// The loopback link is in every namespace, with index 1.
func usedLinks(rules []Rule, pending []int, links map[string]int) []helperLink {
	var out []helperLink
	for name, idx := range links {
		if name == "lo" && idx == 1 {
			continue
		}
		for _, i := range pending {
			if strings.Contains(rules[i].Rule.Text, name) {
				out = append(out, helperLink{Name: name, Index: idx})
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// Key is the compile key of a rule: a hash of everything nft's output for
// it depends on. The text; nft's version; the table's family; the chain's
// type, hook and priority; and, of the table's declarations and the
// namespace's links, those whose names the text holds (a name it holds in
// a longer word only makes the key change more often than needed). A rule
// whose key equals the key in the marker of an intact kernel rule compiles
// to that kernel rule's bytecode, without nft.
func Key(version string, t *model.NftTable, c *model.NftChain, text string, links map[string]int) string {
	h := sha256.New()
	w := func(parts ...string) {
		for _, p := range parts {
			h.Write([]byte(strconv.Itoa(len(p))))
			h.Write([]byte{':'})
			h.Write([]byte(p))
		}
	}
	w("nft rule key v1", version, t.Family, c.Type, c.Hook, strconv.Itoa(c.Priority), strconv.FormatBool(c.Base()))
	for i := range t.Sets {
		s := &t.Sets[i]
		if strings.Contains(text, s.Name) {
			w("set", s.Name, setDecl(s))
		}
	}
	for i := range t.Chains {
		ch := &t.Chains[i]
		if strings.Contains(text, ch.Name) {
			w("chain", ch.Name, ch.Type, ch.Hook, strconv.Itoa(ch.Priority), strconv.FormatBool(ch.Base()))
		}
	}
	names := make([]string, 0, len(links))
	for n := range links {
		if strings.Contains(text, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w("link", n, strconv.Itoa(links[n]))
	}
	w("text", text)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
