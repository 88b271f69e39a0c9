package nftcompile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftwire"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// Request is what one Compile compiles.
type Request struct {
	// Decls are tables whose declarations nft compiles: each set nft
	// declares (Decl), with its elements, and each object gets its Raw.
	Decls []*model.NftTable
	// Rules are compiled in the context of their tables (whose
	// declarations are read; their rules are not).
	Rules []Rule
	// Links are the names and indexes of the namespace's links, for
	// rules that name one (iif, oif).
	Links map[string]int
}

// Empty reports whether there is nothing to compile.
func (r *Request) Empty() bool { return len(r.Decls) == 0 && len(r.Rules) == 0 }

// Compiler compiles rules: the real one runs nft (Nft), tests of the
// stages above use a fake (kerneltest).
type Compiler interface {
	// Compile compiles a request: each rule's Compiled and Fingerprint
	// are set, each declaration's Raw. When nft refuses a rule or a
	// declaration, the error is an Errors, with nft's message for each,
	// and what it took is still set; any other error means nft could not
	// be run at all.
	Compile(ctx context.Context, req *Request) error
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

	// The version of the program as versionOf identified it (Path may
	// change: the command line sets it for each command run in one
	// process; the program may be upgraded under a daemon).
	mu        sync.Mutex
	versionOf binaryID
	version   string
	verr      error
}

// maxRuns bounds the runs of nft for one Compile: each run that fails drops
// the rules and declarations nft placed its errors at, and runs again.
const maxRuns = 1000

// ErrNoNft says nft is not installed.
var ErrNoNft = errors.New("nft is not installed (Debian package nftables): it compiles the file's nftables rules")

func (n *Nft) path() string {
	if n.Path == "" {
		return DefaultNft
	}
	return n.Path
}

// Version runs `nft --version`, once per program: again when the file at
// Path is another (binaryID).
func (n *Nft) Version(ctx context.Context) (string, error) {
	return n.VersionCached(ctx, nil, false)
}

// VersionCached is Version with a cache of the answer in a state directory
// (nil: none), read when it names the program as it is now and, with save,
// written after nft is asked: a one-shot command does not run nft only to
// learn what it learnt the last time. The file is trusted only where the
// process trusts its state (statedir.ReadTrusted: owned by root or the
// caller, writable by nobody else), since the version is part of every
// rule's key.
func (n *Nft) VersionCached(ctx context.Context, dir *statedir.Dir, save bool) (string, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	path := n.path()
	if !filepath.IsAbs(path) {
		n.versionOf, n.version = binaryID{}, ""
		n.verr = fmt.Errorf("the nft program must be given by an absolute path, not %q", path)
		return "", n.verr
	}
	id, err := identify(path)
	if err != nil {
		// Not there, or not readable: nft's own run says which.
		id = binaryID{}
	}
	if id.Path != "" && n.versionOf == id && n.verr == nil {
		return n.version, nil
	}
	if id.Path != "" && dir != nil {
		if v, ok := loadVersion(dir, id); ok {
			n.versionOf, n.version, n.verr = id, v, nil
			return v, nil
		}
	}
	n.versionOf, n.version, n.verr = id, "", nil
	out, err := exec.CommandContext(ctx, path, "--version").Output()
	switch {
	case errors.Is(err, exec.ErrNotFound), isNotExist(err):
		n.verr = fmt.Errorf("%w (%s: not found)", ErrNoNft, path)
	case err != nil:
		n.verr = fmt.Errorf("%s --version: %w", path, err)
	default:
		n.version = strings.TrimSpace(string(out))
	}
	if n.verr != nil || id.Path == "" {
		return n.version, n.verr
	}
	// The program replaced while it ran: what answered is not known.
	if after, err := identify(path); err != nil || after != id {
		n.versionOf = binaryID{}
		return n.version, nil
	}
	if dir != nil && save {
		// A cache that cannot be written costs the next run an nft.
		_ = saveVersion(dir, id, n.version)
	}
	return n.version, nil
}

// Compile compiles with nft in a namespace of its own.
func (n *Nft) Compile(ctx context.Context, req *Request) error {
	if req.Empty() {
		return nil
	}
	if _, err := n.Version(ctx); err != nil {
		return err
	}
	c := &compiling{n: n, req: req, badTable: map[*model.NftTable]bool{}, renamed: map[*model.NftTable]map[string]string{}, alone: map[int]bool{}}
	pending := make([]int, len(req.Rules))
	for i := range req.Rules {
		pending[i] = i
	}
	if err := c.compile(ctx, pending, append([]*model.NftTable(nil), req.Decls...)); err != nil {
		return err
	}
	// A split run judges its halves apart, and a rule taken in one may
	// close a loop with a rule of the other (the kernel refuses a jump
	// that does): the rules taken go through again, together, until nft
	// takes them in one run.
	for c.split {
		c.split = false
		var took []int
		for i, r := range req.Rules {
			if r.Rule.Compiled != nil {
				took = append(took, i)
			}
		}
		if err := c.compile(ctx, took, nil); err != nil {
			return err
		}
	}
	if len(c.errs) > 0 {
		sortErrors(c.errs)
		var texts []string
		for _, r := range req.Rules {
			texts = append(texts, r.Rule.Text)
		}
		for _, t := range req.Decls {
			for _, s := range t.Sets {
				texts = append(texts, s.Decl)
				texts = append(texts, s.ElemTexts...)
			}
			for _, o := range t.Objects {
				texts = append(texts, o.Decl)
			}
		}
		maskSecrets(c.errs, texts)
		return c.errs
	}
	return nil
}

// compiling is one Compile's state.
type compiling struct {
	n        *Nft
	req      *Request
	errs     Errors
	badTable map[*model.NftTable]bool
	renamed  map[*model.NftTable]map[string]string
	runs     int
	// split says a run was split: its halves were judged apart.
	split bool
	// alone are the rules that start a nft of their own (a part): nft
	// took each alone, and refused it with a syntax error after other
	// rules (below, leaks).
	alone map[int]bool
}

// syntaxErrorPrefix starts nft's parser's errors. nft's scanner keeps
// state from one command to the next in one run (nft 1.0.6: after
// `ct mark set meta mark dnat ip to 10.0.0.1`, `helper` is the keyword of
// `ct helper` in every later command, and `jump helper` is a syntax
// error), so a syntax error after other rules is a rule's own only if nft
// gives it with the rule alone too.
const syntaxErrorPrefix = "syntax error"

// compile runs nft on the pending rules and declarations until it takes
// what is left: each run drops the rules nft placed an error at (and the
// tables whose declarations it refused). A run that fails without placing
// an error (nft's assertion failed, it crashed) is split in halves, down to
// the rule that fails alone, which gets what nft said.
func (c *compiling) compile(ctx context.Context, pending []int, decls []*model.NftTable) error {
	rules := c.req.Rules
	pending = slices.DeleteFunc(pending, func(i int) bool { return c.badTable[rules[i].Table] })
	decls = slices.DeleteFunc(decls, func(t *model.NftTable) bool { return c.badTable[t] })
	for len(pending) > 0 || len(decls) > 0 {
		if c.runs++; c.runs > maxRuns {
			return fmt.Errorf("compile nftables rules: nft still refused some after %d runs", maxRuns)
		}
		s, chains := build(rules, pending, decls, c.renamed, c.alone)
		in := &helperIn{Nft: c.n.path(), Scripts: s.texts(), Links: usedLinks(rules, pending, decls, c.req.Links)}
		for ti, t := range s.tables {
			in.Tables = append(in.Tables, helperTable{t.Family, tableName(ti)})
		}
		out, err := run(ctx, in)
		if err != nil {
			return err
		}
		if !out.Refused {
			c.errs = append(c.errs, take(rules, s, chains, decls, out.Dumps)...)
			return nil
		}
		lines := s.parts[out.Failed].lines
		drop := map[int]bool{}
		var unplaced []string
		rename, atDecl := false, false
		// Rules nft gave a syntax error after other rules: judged alone
		// (leaks, below) before they are refused.
		var suspects []int
		judged := false
		// The chains this run's script named as the file does, and this
		// loop renamed: errors at their names are the names'.
		renamedNow := map[*model.NftTable]map[string]bool{}
		for _, e := range firstKernelError(parseErrors(out.Stderr)) {
			if e.Line <= 0 || e.Line > len(lines) {
				unplaced = append(unplaced, e.Msg)
				continue
			}
			o := lines[e.Line-1]
			t := s.tables[o.table]
			switch {
			case o.what == "rule" && strings.HasPrefix(e.Msg, syntaxErrorPrefix) && !c.alone[o.rule] && !drop[o.rule] &&
				slices.ContainsFunc(lines[:e.Line-1], func(o origin) bool { return o.what == "rule" }):
				// Only after another rule of the same nft; and before
				// the chain's name is taken for one nft cannot write
				// (after such a rule, `helper` is a keyword in
				// `add rule ip t helper …`).
				if !slices.Contains(suspects, o.rule) {
					suspects = append(suspects, o.rule)
				}
				continue
			case o.what == "rule" && e.Col-1 < o.prefix && !strings.HasPrefix(e.Msg, kernelErrorPrefix) &&
				(c.renamed[t][o.name] == "" || renamedNow[t][o.name]):
				// nft's own error in the words before the text: the
				// chain's name is one nft cannot write (below).
				o.what = "chain"
				fallthrough
			case o.what == "chain" && (c.renamed[t][o.name] == "" || renamedNow[t][o.name]):
				// A name nft cannot write: the chain's rules compile as
				// well in a chain named otherwise. nft's parser, having
				// lost its way at a name, gives more errors on the next
				// chain's line (`unexpected '{'`; after `ct`, whose
				// keywords it goes on reading, `unexpected helper`, at
				// the name): those are the same confusion's, and the
				// next run, with the first name renamed, judges that
				// chain again. It keeps its name meanwhile: a rule or a
				// verdict map's element that jumps to it names it, and
				// in a script where it is renamed the kernel finds no
				// such chain (ENOENT).
				if rename && c.renamed[t][o.name] == "" {
					continue
				}
				if c.renamed[t] == nil {
					c.renamed[t] = map[string]string{}
				}
				if c.renamed[t][o.name] == "" {
					c.renamed[t][o.name] = fmt.Sprintf("%s_c%d", tableName(o.table), len(c.renamed[t]))
					if renamedNow[t] == nil {
						renamedNow[t] = map[string]bool{}
					}
					renamedNow[t][o.name] = true
				}
				rename = true
				continue
			case o.what == "rule":
				// An error placed before the text is the kernel's about
				// the whole command (nft places those at its start).
				r := rules[o.rule].Rule
				if !drop[o.rule] {
					at, msg := max(0, e.Col-1-o.prefix), e.Msg
					if off, name, ok := undeclaredJump(t, r.Text, e.Msg); ok {
						at, msg = off, e.Msg+": "+undeclaredJumpMsg(t, name)
					}
					c.errs = append(c.errs, Error{Pos: r.Source.At(at), Path: r.Source.Path(), Msg: msg})
					r.Compiled, r.Fingerprint = nil, ""
				}
				drop[o.rule] = true
				continue
			case o.what == "table" && rename:
				// The parser's recovery after a name it could not read.
				continue
			case len(pending) > 0:
				// nft places some errors a rule causes at a declaration
				// (a rule that adds to an interval set: at the set).
				// Whose it is, the declarations alone tell (below).
				atDecl = true
				unplaced = append(unplaced, e.Msg)
				continue
			}
			if !c.badTable[t] {
				c.errs = append(c.errs, declError(t, o, e))
			}
			c.badTable[t] = true
		}
		if len(suspects) > 0 {
			if err := c.judgeAlone(ctx, suspects, drop); err != nil {
				return err
			}
			judged = true
		}
		var kept []int
		for _, i := range pending {
			if !drop[i] && !c.badTable[rules[i].Table] {
				kept = append(kept, i)
			}
		}
		var keptDecls []*model.NftTable
		for _, t := range decls {
			if !c.badTable[t] {
				keptDecls = append(keptDecls, t)
			}
		}
		if len(kept) < len(pending) || len(keptDecls) < len(decls) || rename || judged {
			pending, decls = kept, keptDecls
			continue
		}
		if atDecl && !rename {
			bad, err := c.probe(ctx, s.tables, decls)
			if err != nil {
				return err
			}
			if bad {
				continue
			}
		}
		// nft placed no error at a rule: the same run would fail again.
		msg := strings.Join(unplaced, "; ")
		if msg == "" {
			msg = strings.TrimSpace(out.Stderr)
		}
		if len(pending) > 1 || len(pending) == 1 && len(decls) > 0 {
			// Split the rules of the part that failed (all of them when
			// the declarations did); the others go on as they were.
			suspects := pending
			if fr := s.parts[out.Failed].rules; len(fr) > 0 {
				suspects = fr
			}
			c.split = true
			half := len(suspects) / 2
			var rest []int
			for _, i := range pending {
				if !slices.Contains(suspects, i) {
					rest = append(rest, i)
				}
			}
			if err := c.compile(ctx, append([]int(nil), suspects[:half]...), decls); err != nil {
				return err
			}
			if err := c.compile(ctx, append([]int(nil), suspects[half:]...), nil); err != nil {
				return err
			}
			return c.compile(ctx, rest, nil)
		}
		if len(pending) == 1 {
			r := rules[pending[0]].Rule
			c.errs = append(c.errs, Error{Pos: r.Source.At(0), Path: r.Source.Path(), Msg: "nft failed: " + msg})
			return nil
		}
		for _, t := range s.tables {
			if !c.badTable[t] {
				c.badTable[t] = true
				c.errs = append(c.errs, Error{Pos: t.Origin, Path: "nftables." + t.Key().String(), Msg: "nft failed: " + msg})
			}
		}
		return nil
	}
	return nil
}

// judgeAlone judges rules nft gave a syntax error after other rules, each in a
// nft of its own, with its table's declarations: a rule nft refuses alone,
// with an error in its text, is refused with what nft said then and
// dropped; any other starts a part of its own from now on (one nft takes
// alone compiles there; one whose chain's name or whose command nft
// refuses goes through the run's other cases, alone).
func (c *compiling) judgeAlone(ctx context.Context, suspects []int, drop map[int]bool) error {
	if c.runs++; c.runs > maxRuns {
		return fmt.Errorf("compile nftables rules: nft still refused some after %d runs", maxRuns)
	}
	rules := c.req.Rules
	in := &helperIn{Nft: c.n.path(), Links: usedLinks(rules, suspects, nil, c.req.Links)}
	var prefixes []int
	for _, i := range suspects {
		s := &script{renamed: c.renamed}
		s.declare(rules[i].Table, false)
		s.rule(0, rules[i].Chain.Name, i, rules[i].Rule.Text, false)
		// One nft: the declarations' part, then the rule's.
		in.Checks = append(in.Checks, strings.Join(s.texts(), ""))
		last := s.cur().lines
		prefixes = append(prefixes, last[len(last)-1].prefix)
	}
	out, err := run(ctx, in)
	if err != nil {
		return err
	}
	if len(out.Checked) != len(suspects) {
		return fmt.Errorf("compile nftables rules: %d checks answered of %d", len(out.Checked), len(suspects))
	}
	for k, i := range suspects {
		var e *nftError
		// The rule is the check's last line (the declarations, then
		// the rule).
		for _, ce := range parseErrors(out.Checked[k]) {
			if ce.Line > 0 && strings.Count(in.Checks[k], "\n") == ce.Line && ce.Col-1 >= prefixes[k] {
				e = &nftError{Line: ce.Line, Col: ce.Col - prefixes[k], Msg: ce.Msg}
				break
			}
		}
		if e == nil {
			c.alone[i] = true
			continue
		}
		r := rules[i].Rule
		c.errs = append(c.errs, Error{Pos: r.Source.At(max(0, e.Col-1)), Path: r.Source.Path(), Msg: e.Msg})
		r.Compiled, r.Fingerprint = nil, ""
		drop[i] = true
	}
	return nil
}

// kernelErrorPrefix starts the messages nft prints for the kernel's
// refusals (EOPNOTSUPP, ENOENT, ELOOP…), as opposed to its own.
const kernelErrorPrefix = "Could not process rule: "

// firstKernelError keeps nft's own errors and, of the kernel's, the first
// placed one: once the kernel refuses a rule that fails its table's
// validation (a hook the rule's statement may not run in), it refuses
// every rule of the table after it too, with the same error, for the bad
// rule is still in the transaction. Which of those are bad alone, the next
// run, without the first, tells.
func firstKernelError(es []nftError) []nftError {
	out := es[:0:0]
	first := -1
	for i, e := range es {
		if !strings.HasPrefix(e.Msg, kernelErrorPrefix) || e.Line == 0 {
			out = append(out, e)
			continue
		}
		if first < 0 || e.Line < es[first].Line {
			first = i
		}
	}
	if first >= 0 {
		out = append(out, es[first])
	}
	return out
}

// probe runs nft on tables' declarations alone (with their elements for
// those in decls): errors there are the declarations', and their tables
// are marked bad. It reports whether any was.
func (c *compiling) probe(ctx context.Context, tables, decls []*model.NftTable) (bool, error) {
	if c.runs++; c.runs > maxRuns {
		return false, fmt.Errorf("compile nftables rules: nft still refused some after %d runs", maxRuns)
	}
	s := &script{renamed: c.renamed}
	for _, t := range tables {
		s.declare(t, slices.Contains(decls, t))
	}
	for ti := range s.tables {
		s.bigSets(ti)
	}
	in := &helperIn{Nft: c.n.path(), Scripts: s.texts()}
	for ti, t := range s.tables {
		in.Tables = append(in.Tables, helperTable{t.Family, tableName(ti)})
	}
	out, err := run(ctx, in)
	if err != nil || !out.Refused {
		return false, err
	}
	bad := false
	for _, e := range parseErrors(out.Stderr) {
		var t *model.NftTable
		o := origin{what: "table"}
		if lines := s.parts[out.Failed].lines; e.Line > 0 && e.Line <= len(lines) {
			o = lines[e.Line-1]
			t = s.tables[o.table]
		}
		for _, tt := range s.tables {
			if t != nil && tt != t || c.badTable[tt] {
				continue
			}
			c.badTable[tt], bad = true, true
			c.errs = append(c.errs, declError(tt, o, e))
		}
	}
	return bad, nil
}

// declError places nft's error at a declaration of a table.
func declError(t *model.NftTable, o origin, e nftError) Error {
	path := "nftables." + t.Key().String()
	pos := t.Origin
	switch o.what {
	case "chain", "rule":
		// An error in the words before a rule's text is its chain's.
		path += ".chains." + o.name
		if c := t.Chain(o.name); c != nil {
			pos = c.Origin
		}
	case "set", "element":
		if s := t.Set(o.name); s != nil {
			pos = s.Origin
			path += map[bool]string{true: ".maps.", false: ".sets."}[s.Map] + o.name
			if o.what == "element" && o.rule < len(s.ElemSources) {
				src := s.ElemSources[o.rule]
				at, msg := max(0, e.Col-1-o.prefix), e.Msg
				if o.rule < len(s.ElemTexts) {
					if off, name, ok := undeclaredJump(t, s.ElemTexts[o.rule], e.Msg); ok {
						at, msg = off, e.Msg+": "+undeclaredJumpMsg(t, name)
					}
				}
				return Error{Pos: src.At(at), Path: src.Path(), Msg: msg}
			}
		}
	case "object":
		path += ".objects." + o.name
		if ob := t.Object(o.name); ob != nil {
			pos = ob.Origin
		}
	}
	return Error{Pos: pos, Path: path, Msg: e.Msg}
}

// chainKey names a chain of a script's table.
type chainKey struct {
	table int
	chain string
}

// build writes the script of the pending rules and declarations: their
// tables' declarations, then the rules. chains lists, for each chain, its
// rules in order.
func build(rules []Rule, pending []int, decls []*model.NftTable, renamed map[*model.NftTable]map[string]string, alone map[int]bool) (*script, map[chainKey][]int) {
	s := &script{renamed: renamed}
	index := map[*model.NftTable]int{}
	chains := map[chainKey][]int{}
	for _, t := range decls {
		if _, ok := index[t]; !ok {
			index[t] = len(s.tables)
			s.declare(t, true)
		}
	}
	for _, i := range pending {
		t := rules[i].Table
		if _, ok := index[t]; !ok {
			index[t] = len(s.tables)
			s.declare(t, false)
		}
	}
	for _, t := range decls {
		s.bigSets(index[t])
	}
	for _, i := range pending {
		r := rules[i]
		ti := index[r.Table]
		s.rule(ti, r.Chain.Name, i, r.Rule.Text, alone[i])
		k := chainKey{ti, s.chainName(r.Table, r.Chain.Name)}
		chains[k] = append(chains[k], i)
	}
	return s, chains
}

// take sets the rules and declarations from the dumps of a run nft took
// whole.
func take(rules []Rule, s *script, chains map[chainKey][]int, decls []*model.NftTable, dumps []*nftwire.TableDump) Errors {
	var errs Errors
	for ti, d := range dumps {
		t := s.tables[ti]
		if slices.Contains(decls, t) {
			errs = append(errs, takeDecls(t, d)...)
		}
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

// takeDecls sets a table's declarations from its dump.
func takeDecls(t *model.NftTable, d *nftwire.TableDump) Errors {
	var errs Errors
	// A rule compiled with the declarations that changes a set from the
	// packet path made the kernel give the set a size: the kernel reader
	// takes it out again, and so is it here, whether the rules were
	// compiled with the declarations or not.
	fed := map[string]bool{}
	for _, r := range d.Rules {
		names, _ := nftwire.DynsetSets(r.Exprs)
		for _, n := range names {
			fed[n] = true
		}
	}
	for i := range t.Sets {
		set := &t.Sets[i]
		if set.Decl == "" {
			continue
		}
		path := "nftables." + t.Key().String() + map[bool]string{true: ".maps.", false: ".sets."}[set.Map] + set.Name
		ks := d.Set(set.Name)
		if ks == nil {
			errs = append(errs, Error{Pos: set.Origin, Path: path, Msg: "nft made no such set"})
			continue
		}
		if fed[set.Name] {
			ks.DropDynsetSize()
		}
		raw, err := nftwire.RawSet(ks, d.Elems[set.Name], false)
		if err != nil {
			errs = append(errs, Error{Pos: set.Origin, Path: path, Msg: fmt.Sprintf("read what nft compiled: %v", err)})
			continue
		}
		if raw.Expiring != nil {
			// The kernel would delete such an element when its timeout
			// runs out, and every pass add it back, for ever.
			errs = append(errs, Error{Pos: set.Origin, Path: path + ".elements",
				Msg: "an element with a timeout (its own, or the set's default timeout) expires, and every pass would add it back: declare elements without a timeout, in a set without a default timeout"})
			continue
		}
		set.Raw = raw
	}
	for i := range t.Objects {
		ob := &t.Objects[i]
		for j := range d.Objs {
			if d.Objs[j].Name != ob.Name {
				continue
			}
			raw, err := nftwire.RawObj(&d.Objs[j])
			if err != nil {
				errs = append(errs, Error{Pos: ob.Origin, Path: "nftables." + t.Key().String() + ".objects." + ob.Name, Msg: fmt.Sprintf("read what nft compiled: %v", err)})
				break
			}
			ob.Raw = raw
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

// usedLinks returns the links whose names the pending rules' texts hold,
// or the declarations of their tables and of decls, which the script
// declares with them (an iface_index set's elements name links too, a
// netdev chain its device). The loopback link is in every namespace, with
// index 1.
func usedLinks(rules []Rule, pending []int, decls []*model.NftTable, links map[string]int) []helperLink {
	tables := slices.Clone(decls)
	for _, i := range pending {
		if !slices.Contains(tables, rules[i].Table) {
			tables = append(tables, rules[i].Table)
		}
	}
	var out []helperLink
	for name, idx := range links {
		if name == "lo" && idx == 1 {
			continue
		}
		used := slices.ContainsFunc(pending, func(i int) bool { return strings.Contains(rules[i].Rule.Text, name) }) ||
			slices.ContainsFunc(tables, func(t *model.NftTable) bool { return DeclaresName(t, name) })
		if used {
			out = append(out, helperLink{Name: name, Index: idx})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// DeclaresName reports whether a table's declarations hold a name: a set's
// declaration or elements, an object's, a chain's device.
func DeclaresName(t *model.NftTable, name string) bool {
	for i := range t.Sets {
		s := &t.Sets[i]
		if strings.Contains(s.Decl, name) || slices.ContainsFunc(s.ElemTexts, func(e string) bool { return strings.Contains(e, name) }) {
			return true
		}
	}
	for i := range t.Objects {
		if strings.Contains(t.Objects[i].Decl, name) {
			return true
		}
	}
	for i := range t.Chains {
		if t.Chains[i].Device == name {
			return true
		}
	}
	return false
}

// framer lays parts out for a hash, each after its length, so that no two
// sequences of parts hash alike. The parts go into one buffer hashed
// whole: written to a hash.Hash one by one, each part was a copy, and a
// table of a thousand rules is a thousand keys.
type framer struct{ b []byte }

func (f *framer) add(parts ...string) {
	for _, p := range parts {
		f.b = strconv.AppendInt(f.b, int64(len(p)), 10)
		f.b = append(f.b, ':')
		f.b = append(f.b, p...)
	}
}

// Key is the compile key of a rule: a hash of everything nft's output for
// it depends on. The text; nft's version; the table's family; the chain's
// type, hook and priority; and, of the table's declarations and the
// namespace's links, those whose names the text holds (a name it holds in
// a longer word only makes the key change more often than needed). A rule
// whose key equals the key in the marker of an intact kernel rule compiles
// to that kernel rule's bytecode, without nft.
func Key(version string, t *model.NftTable, c *model.NftChain, text string, links map[string]int) string {
	var f framer
	return f.key(version, t, c, text, links)
}

// key is Key, laid out in f's buffer (reused).
func (f *framer) key(version string, t *model.NftTable, c *model.NftChain, text string, links map[string]int) string {
	f.b = f.b[:0]
	f.add("nft rule key v1", version, t.Family, c.Type, c.Hook, strconv.Itoa(c.Priority), strconv.FormatBool(c.Base()))
	for i := range t.Sets {
		s := &t.Sets[i]
		if strings.Contains(text, s.Name) {
			f.add("set", s.Name, setDecl(s))
		}
	}
	for i := range t.Objects {
		o := &t.Objects[i]
		if strings.Contains(text, o.Name) {
			f.add("object", o.Name, o.Decl)
		}
	}
	for i := range t.Chains {
		ch := &t.Chains[i]
		if strings.Contains(text, ch.Name) {
			f.add("chain", ch.Name, ch.Type, ch.Hook, strconv.Itoa(ch.Priority), strconv.FormatBool(ch.Base()))
		}
	}
	var names []string
	for n := range links {
		if strings.Contains(text, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		f.add("link", n, strconv.Itoa(links[n]))
	}
	f.add("text", text)
	sum := sha256.Sum256(f.b)
	return hex.EncodeToString(sum[:16])
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Keys computes compile keys (Key) and remembers them from one plan to the
// next: a key depends on the table's context (nft's version, the family,
// the sets, objects and chains the table declares, the namespace's links)
// and on the chain and the text, so while a table's context is the same a
// text keeps the key computed before. A daemon's pass, and an apply's
// verification, otherwise hash every rule of the file again (1,000 rules:
// over a millisecond of a one-shot apply's CPU). Only the keys met in the
// last plan are kept, so the memo follows the file.
type Keys struct {
	last, next map[keyIn]string
	f          framer
}

type keyIn struct{ ctx, chain, text string }

// Begin starts a plan of about n rules: the keys met in the one before
// stay known.
func (k *Keys) Begin(n int) {
	k.last, k.next = k.next, make(map[keyIn]string, n)
}

// TableContext is what a table's rules' keys depend on but their chain and
// their text: every declaration and link Key may look at, whole.
func TableContext(version string, t *model.NftTable, links map[string]int) string {
	var f framer
	f.add("nft table context v1", version, t.Family)
	for i := range t.Sets {
		f.add("set", t.Sets[i].Name, setDecl(&t.Sets[i]))
	}
	for i := range t.Objects {
		f.add("object", t.Objects[i].Name, t.Objects[i].Decl)
	}
	for i := range t.Chains {
		ch := &t.Chains[i]
		f.add("chain", ch.Name, ch.Type, ch.Hook, strconv.Itoa(ch.Priority), strconv.FormatBool(ch.Base()))
	}
	names := make([]string, 0, len(links))
	for n := range links {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f.add("link", n, strconv.Itoa(links[n]))
	}
	sum := sha256.Sum256(f.b)
	return string(sum[:])
}

// Key is Key for a rule of a table whose context (TableContext) is ctx.
func (k *Keys) Key(ctx, version string, t *model.NftTable, c *model.NftChain, text string, links map[string]int) string {
	in := keyIn{ctx, c.Name, text}
	if key, ok := k.next[in]; ok {
		return key
	}
	key, ok := k.last[in]
	if !ok {
		key = k.f.key(version, t, c, text, links)
	}
	if k.next == nil {
		k.next = map[keyIn]string{}
	}
	k.next[in] = key
	return key
}
