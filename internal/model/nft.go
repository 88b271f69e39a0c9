package model

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"time"
)

// NftFamilies are the table families nftables knows, in nft's words.
var NftFamilies = []string{"ip", "ip6", "inet", "arp", "bridge", "netdev"}

// NftTableKey identifies a table: the same name in two families is two tables.
type NftTableKey struct {
	Family, Name string
}

func (k NftTableKey) String() string { return k.Family + " " + k.Name }

// Less orders tables by family then name.
func (k NftTableKey) Less(o NftTableKey) bool {
	if k.Family != o.Family {
		return k.Family < o.Family
	}
	return k.Name < o.Name
}

// NftTable is an nftables table netreconcile owns whole: every set, chain
// and rule in it is the file's.
type NftTable struct {
	Family, Name string
	// Sets and Chains are kept in creation order (the file's order), which
	// is the order nft lists them in.
	Sets   []NftSet
	Chains []NftChain
	// Objects are the named stateful objects (counters, quotas, limits, ct
	// helpers…), in the file's order.
	Objects []NftObject

	// Adopt (desired) lets the file take over a table that exists and that
	// netreconcile did not create; without it such a table is a conflict.
	Adopt bool
	// Handle is the kernel's handle of the table (actual): a per-namespace
	// counter, so a table deleted and created again has another one.
	Handle uint64
	// Dormant (actual) is NFT_TABLE_F_DORMANT: every base chain of the
	// table is unregistered from its hook, so none of its rules runs. An
	// owned table is never dormant; anyone may set the flag by hand.
	Dormant bool
	Owned   bool   // actual: recorded in the ownership ledger
	Origin  string // desired: file:line:col
	// Unread (actual, another's table only) says why the table could not
	// be read: show --all still names it, with that reason.
	Unread string
}

// Key returns the table's identity.
func (t *NftTable) Key() NftTableKey { return NftTableKey{t.Family, t.Name} }

// Set returns the named set or nil.
func (t *NftTable) Set(name string) *NftSet {
	for i := range t.Sets {
		if t.Sets[i].Name == name {
			return &t.Sets[i]
		}
	}
	return nil
}

// Object returns the named object or nil.
func (t *NftTable) Object(name string) *NftObject {
	for i := range t.Objects {
		if t.Objects[i].Name == name {
			return &t.Objects[i]
		}
	}
	return nil
}

// Chain returns the named chain or nil.
func (t *NftTable) Chain(name string) *NftChain {
	for i := range t.Chains {
		if t.Chains[i].Name == name {
			return &t.Chains[i]
		}
	}
	return nil
}

// SortNftTables orders tables by key.
func SortNftTables(ts []NftTable) {
	sort.Slice(ts, func(i, j int) bool { return ts[i].Key().Less(ts[j].Key()) })
}

// NftChain is a base chain (Hook set) or a regular chain.
type NftChain struct {
	Name     string
	Type     string // filter, nat, route; "" for a regular chain
	Hook     string
	Priority int
	Policy   string // accept or drop; "" for a regular chain
	Device   string // netdev hooks
	Rules    []NftRule
	Origin   string
}

// Base reports whether the chain is attached to a hook.
func (c *NftChain) Base() bool { return c.Hook != "" }

// Spec renders the chain's definition as nft writes it.
func (c *NftChain) Spec() string {
	if !c.Base() {
		return "regular"
	}
	s := fmt.Sprintf("type %s hook %s", c.Type, c.Hook)
	if c.Device != "" {
		s += fmt.Sprintf(" device %q", c.Device)
	}
	s += fmt.Sprintf(" priority %d", c.Priority)
	if c.Policy != "" {
		s += "; policy " + c.Policy
	}
	return s
}

// NftRule is one rule of a chain. Its meaning is what nft compiles its
// text to: the rule's bytecode, of which Fingerprint is the hash in normal
// form (stateful values zeroed, anonymous sets by content). A declared rule
// equals a kernel rule when their fingerprints are equal.
type NftRule struct {
	// Text is the file's text (desired); on a kernel rule, the text our
	// marker holds, "" when it holds none.
	Text string
	// Key identifies what the text is compiled from: the text, the
	// table's family, the chain's type and hook, the declarations and
	// links it names, nft's version. A desired rule's is made before the
	// diff; a kernel rule's is the one in our marker.
	Key string
	// Fingerprint is the hash of the rule's bytecode in normal form:
	// desired once compiled (or known from an intact kernel rule of the
	// same key); actual always, read from the kernel.
	Fingerprint string
	// Marked is the fingerprint our marker holds (actual): the rule is
	// intact, as we wrote it, when it equals Fingerprint.
	Marked string
	// Compiled is the rule as nft compiled it (desired): what a write
	// sends. Nil until compiled; only rules the plan writes need it.
	Compiled *NftCompiled
	Handle   uint64 // actual
	// Source is where the text is in the file (desired), for nft's errors.
	Source NftSource
}

// Intact reports whether a kernel rule is as netreconcile wrote it: its
// bytecode hashes to the fingerprint of its marker.
func (r *NftRule) Intact() bool { return r.Marked != "" && r.Marked == r.Fingerprint }

// Label names the rule for plans: its text, or its handle when unknown.
func (r *NftRule) Label() string {
	if r.Text != "" {
		return r.Text
	}
	return fmt.Sprintf("handle %d (not written by netreconcile)", r.Handle)
}

// NftCompiled is a rule as nft compiled it, in the bytes the kernel dumped
// it in: carried into netreconcile's batch as they are.
type NftCompiled struct {
	// Exprs is the payload of NFTA_RULE_EXPRESSIONS.
	Exprs []byte
	// UData is nft's user data of the rule (its comment), without ours.
	UData []byte
	// Sets are the anonymous sets the expressions refer to, by Name.
	Sets []NftAnonSet
	// Fingerprint is the hash of the normal form; ShapeFP the same
	// without the anonymous sets' elements (nftwire.ShapeFingerprint).
	Fingerprint, ShapeFP string
}

// NftAnonSet is an anonymous set of a compiled rule (`tcp dport { 22, 80 }`):
// the kernel names it when it is created, so a batch creates it again with
// the rule that uses it.
type NftAnonSet struct {
	Name string // as the expressions name it
	// Spec is the NEWSET attributes but table, name, handle and id.
	Spec []byte
	// Elems are each element's attributes.
	Elems [][]byte
}

// NftSource is where a text nft reads (a rule, an element) is in the file.
// A desired rule or element carries one, so it is small (24 bytes): what
// the items of a list share (the file and the list's path) is in one NftList
// they point to.
type NftSource struct {
	Of        *NftList
	Line, Col int32 // of the text's first character
	Index     int32 // in the list
	// Flat says the text is on one line of the file as written, so that
	// a byte offset in it is a column.
	Flat bool
}

// NftList is a list of texts in a file: the rules of a chain, the elements
// of a set.
type NftList struct {
	File string
	// Path is the list's field path (nftables.inet t.chains.c.rules).
	Path string
}

// Path is the text's field path (nftables.inet t.chains.c.rules[0]).
func (s NftSource) Path() string {
	if s.Of == nil || s.Of.Path == "" {
		return ""
	}
	return s.Of.Path + "[" + strconv.Itoa(int(s.Index)) + "]"
}

// At returns the position of byte offset off of the text: file:line:col.
func (s NftSource) At(off int) string {
	file := ""
	if s.Of != nil {
		file = s.Of.File
	}
	col := int(s.Col)
	if s.Flat {
		col += off
	}
	if s.Line == 0 {
		return file
	}
	return fmt.Sprintf("%s:%d:%d", file, s.Line, col)
}

// Set key types netreconcile reads and writes.
const (
	NftIPv4    = "ipv4_addr"
	NftIPv6    = "ipv6_addr"
	NftService = "inet_service"
	NftMark    = "mark"
	NftProto   = "inet_proto"
)

// NftSetTypes lists the accepted set types.
var NftSetTypes = []string{NftIPv4, NftIPv6, NftService, NftMark, NftProto}

// NftSet is a named set. Its elements are kept sorted by key.
type NftSet struct {
	Name     string
	Type     string
	Interval bool
	// Timeout is the flag "timeout": elements may expire. DefaultTimeout
	// is the set's "timeout" value (0: none).
	Timeout        bool
	DefaultTimeout time.Duration
	Elems          []NftElem
	// Expiring are the elements the kernel holds with an expiration
	// (actual): added with a timeout, by someone else or by a rule from the
	// packet path, they are deleted by the kernel when it runs out. They
	// are not in Elems.
	Expiring []NftElem
	// FromPackets says that the packet path adds elements to the set
	// (actual): it has the dynamic flag, or a rule of its table adds to it
	// or updates it (add @s, update @s).
	FromPackets bool
	// From feeds the set from WireGuard peers (desired only): Elems holds
	// the file's literal elements until the engine adds the peers'.
	From   *NftElemsFrom
	Origin string

	// Decl is, for a set of a type netreconcile does not make itself
	// (a concatenation, typeof, a map, flags such as constant…), its
	// declaration in nft's words without elements ("type ipv4_addr .
	// inet_service; flags interval;"): nft compiles it (desired). Map says
	// it is a map. Type, Interval and Timeout are then unused.
	Decl string
	Map  bool
	// ElemTexts are such a set's elements as the file writes them, and
	// ElemSources where (desired).
	ElemTexts   []string
	ElemSources []NftSource
	// Raw is such a set as nft compiled it (desired, after the compile)
	// or, for any set not of netreconcile's own making, as the kernel
	// holds it (actual).
	Raw *NftRawSet
	// Listed is such a set as nft lists it (actual, for show).
	Listed *NftListedSet
}

// NftListedSet is a set or map nft declares, as nft lists it (show): its
// keys in nft's words.
type NftListedSet struct {
	Map                            bool
	Type, Typeof                   string
	Flags                          []string
	Timeout, Size, Policy, Comment string
	Counter, AutoMerge             bool
	Elements                       []string
	// Other are lines of nft's listing no key of the file stands for.
	Other []string
}

// NftRawSet is a set in the kernel's bytes: its spec and its elements.
type NftRawSet struct {
	// Spec is the NEWSET attributes but table, name and id.
	Spec []byte
	// SpecFP is the hash of the spec's normal form.
	SpecFP string
	// FedSpecFP is SpecFP of the spec as the kernel reader takes it when
	// a rule feeds the set from the packet path: the size 65535 the
	// kernel gives such a set, if the spec has that size alone, taken
	// out (nftwire.Set.DropDynsetSize). The kernel cannot tell that size
	// from the same size declared (`size 65535`, as firewalls often
	// write it): a declared set is the kernel's fed one when either
	// fingerprint is the kernel's (SameSpec).
	FedSpecFP string
	// Elems are each element's attributes as a batch writes them, and
	// ElemFPs the hash of each one's normal form, in the same order.
	Elems   [][]byte
	ElemFPs []string
	// Keys are each element's identity (its key, key end and flags), for a
	// set with the timeout or dynamic flag or that a rule changes from the
	// packet path; nil for any other. Expiring says which elements carry
	// an expiration (actual; nil when none does): the kernel deletes them
	// by itself.
	Keys     []string
	Expiring []bool
}

// NftObject is a named stateful object: a counter, quota, limit, ct
// helper, ct timeout, ct expectation, synproxy or secmark.
type NftObject struct {
	Name string
	// Decl is the object in nft's words without its name ("quota over 25
	// mbytes", "ct helper { type \"ftp\" protocol tcp; }") (desired).
	Decl string
	// Raw is the object as nft compiled it (desired) or the kernel holds
	// it (actual).
	Raw    *NftRawObj
	Origin string
}

// NftRawObj is an object in the kernel's bytes.
type NftRawObj struct {
	Type        uint32
	Data, UData []byte
	// Fingerprint is the hash of the normal form (counters' values,
	// quotas' use zeroed).
	Fingerprint string
}

// SameSpec reports whether declared set w and kernel set h have the same
// definition (everything but elements).
func SameSpec(w, h *NftSet) bool {
	if w.Spec() == h.Spec() {
		return true
	}
	return h.FromPackets && w.Raw != nil && h.Raw != nil && w.Raw.FedSpecFP != "" && w.Raw.FedSpecFP == h.Raw.SpecFP
}

// Spec renders the set's definition (everything but elements).
func (s *NftSet) Spec() string {
	if s.Decl != "" || s.Raw != nil {
		// A set nft declared is the same set when nft compiled it to
		// the same spec (or the declaration is not compiled yet).
		fp := "not compiled"
		if s.Raw != nil {
			fp = s.Raw.SpecFP
		}
		return "as nft declares it (spec " + fp + ")"
	}
	out := "type " + s.Type
	var flags []string
	if s.Interval {
		flags = append(flags, "interval")
	}
	if s.Timeout {
		flags = append(flags, "timeout")
	}
	if len(flags) > 0 {
		out += "; flags " + strings.Join(flags, ",")
	}
	if s.DefaultTimeout != 0 {
		out += "; timeout " + s.DefaultTimeout.String()
	}
	return out
}

// NftElem is one element: a key, and for interval sets the exclusive end of
// the range ("" when the range runs to the top of the type). Keys are the
// bytes the kernel holds (network order, host order for marks).
type NftElem struct {
	Key, End string
}

// SortNftElems orders elements by key.
func SortNftElems(es []NftElem) {
	sort.Slice(es, func(i, j int) bool { return es[i].Key < es[j].Key })
}

// NftKeyLen is the key size of a set type.
func NftKeyLen(typ string) int {
	switch typ {
	case NftIPv4, NftMark:
		return 4
	case NftIPv6:
		return 16
	case NftService:
		return 2
	case NftProto:
		return 1
	}
	return 0
}

// ParseNftElem parses one element of a set of type typ: an address, a
// prefix or a range a-b for addresses; a port or a range for services; a
// number for marks and protocols. Prefixes and ranges need an interval set.
func ParseNftElem(typ string, interval bool, s string) (NftElem, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if typ == NftIPv6 && isRange && !strings.Contains(lo, ":") {
		isRange = false
	}
	one := func(v string) ([]byte, int, error) {
		switch typ {
		case NftIPv4, NftIPv6:
			p, err := netip.ParsePrefix(v)
			if err != nil {
				a, aerr := netip.ParseAddr(v)
				if aerr != nil || a.Zone() != "" {
					return nil, 0, fmt.Errorf("expected an address, a prefix or a range a-b, found %q", v)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			if p.Addr().Is4() != (typ == NftIPv4) || p.Addr().Is4In6() {
				return nil, 0, fmt.Errorf("%q is not of the set's type %s", v, typ)
			}
			if p.Masked() != p {
				return nil, 0, fmt.Errorf("%q has host bits set; the prefix is %s", v, p.Masked())
			}
			return p.Addr().AsSlice(), p.Bits(), nil
		case NftService:
			n, err := strconv.ParseUint(v, 10, 16)
			if err != nil || !nftDecimal(v) {
				return nil, 0, fmt.Errorf("expected a port 0-65535 in decimal or a range a-b, found %q%s", v, numberProblem(v))
			}
			return binary.BigEndian.AppendUint16(nil, uint16(n)), 16, nil
		case NftMark:
			n, err := strconv.ParseUint(v, 0, 32)
			if err != nil || !nftNumber(v) {
				return nil, 0, fmt.Errorf("expected a 32-bit mark such as 0x40, found %q%s", v, numberProblem(v))
			}
			return binary.NativeEndian.AppendUint32(nil, uint32(n)), 32, nil
		case NftProto:
			// Names are resolved by the caller (desired, from
			// /etc/protocols, as nft does).
			n, err := strconv.ParseUint(v, 10, 8)
			if err != nil || !nftDecimal(v) {
				return nil, 0, fmt.Errorf("expected a protocol name or number in decimal, found %q%s", v, numberProblem(v))
			}
			return []byte{byte(n)}, 8, nil
		}
		return nil, 0, fmt.Errorf("unsupported set type %s", typ)
	}
	if !isRange {
		k, plen, err := one(s)
		if err != nil {
			return NftElem{}, err
		}
		if !interval {
			if plen != len(k)*8 {
				return NftElem{}, fmt.Errorf("%q is a prefix; a set of prefixes needs flags [interval]", s)
			}
			return NftElem{Key: string(k)}, nil
		}
		return NftElem{Key: string(k), End: string(rangeEnd(k, plen))}, nil
	}
	if !interval {
		return NftElem{}, fmt.Errorf("%q is a range; a set of ranges needs flags [interval]", s)
	}
	a, pa, err := one(lo)
	if err != nil {
		return NftElem{}, err
	}
	b, pb, err := one(hi)
	if err != nil {
		return NftElem{}, err
	}
	if pa != len(a)*8 || pb != len(b)*8 || bytes.Compare(a, b) > 0 {
		return NftElem{}, fmt.Errorf("expected a range low-high of single values, low first, found %q", s)
	}
	return NftElem{Key: string(a), End: string(rangeEnd(b, len(b)*8))}, nil
}

// nftDecimal reports whether v is a decimal number nft reads as such:
// digits with no leading zero (nft reads 010 as octal, 8; strconv as 10).
// The element parsers of netreconcile's own types take only numbers that
// nft and they read alike, and refuse the others (numberProblem says
// why), never reading one as something else than nft would.
func nftDecimal(v string) bool {
	if v == "" || len(v) > 1 && v[0] == '0' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// nftNumber reports whether v is a number nft and strconv's base 0 read
// alike: digits (octal with a leading 0 for both) or hexadecimal with 0x;
// not Go's 0o, 0b and _ forms, which nft refuses.
func nftNumber(v string) bool {
	if h, ok := strings.CutPrefix(strings.ToLower(v), "0x"); ok {
		if h == "" {
			return false
		}
		for i := 0; i < len(h); i++ {
			if (h[i] < '0' || h[i] > '9') && (h[i] < 'a' || h[i] > 'f') {
				return false
			}
		}
		return true
	}
	if v == "" {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < '0' || v[i] > '9' {
			return false
		}
	}
	return true
}

// numberProblem says why a number the element parsers refuse is not
// taken, when it is one: "" otherwise.
func numberProblem(v string) string {
	if _, err := strconv.ParseUint(v, 0, 64); err != nil {
		return ""
	}
	if len(v) > 1 && v[0] == '0' && v[1] >= '0' && v[1] <= '9' {
		return " (nft reads a number with a leading zero as octal: write it in decimal without one)"
	}
	if nftNumber(v) {
		// Hexadecimal, which this type's parser does not take.
		return " (write it in decimal)"
	}
	return " (not a number in nft's syntax)"
}

// rangeEnd returns the first value after a prefix of plen bits starting at k,
// or nil when the prefix reaches the top of the type.
func rangeEnd(k []byte, plen int) []byte {
	out := bytes.Clone(k)
	for i := plen; i < len(out)*8; i++ {
		out[i/8] |= 0x80 >> (i % 8)
	}
	for i := len(out) - 1; i >= 0; i-- {
		out[i]++
		if out[i] != 0 {
			return out
		}
	}
	return nil
}

// FormatNftElem renders an element as nft lists it: a prefix when the range
// is one, a range a-b otherwise.
func FormatNftElem(typ string, interval bool, e NftElem) string {
	k := []byte(e.Key)
	if len(k) != NftKeyLen(typ) {
		return fmt.Sprintf("0x%x", k)
	}
	if !interval {
		return formatKey(typ, k)
	}
	last := lastOf(e)
	if typ == NftIPv4 || typ == NftIPv6 {
		if plen, ok := prefixLen(k, last); ok {
			a, _ := netip.AddrFromSlice(k)
			if plen == len(k)*8 {
				return a.String()
			}
			return netip.PrefixFrom(a, plen).String()
		}
	}
	if bytes.Equal(k, last) {
		return formatKey(typ, k)
	}
	return formatKey(typ, k) + "-" + formatKey(typ, last)
}

// lastOf returns the last value of an interval element.
func lastOf(e NftElem) []byte {
	if e.End == "" {
		return bytes.Repeat([]byte{0xff}, len(e.Key))
	}
	out := []byte(e.End)
	for i := len(out) - 1; i >= 0; i-- {
		out[i]--
		if out[i] != 0xff {
			break
		}
	}
	return out
}

func prefixLen(first, last []byte) (int, bool) {
	// A prefix: first and last share the top n bits, first has zeros and
	// last ones below.
	n := 0
	for i := range first {
		x := first[i] ^ last[i]
		if x == 0 {
			n += 8
			continue
		}
		lz := bits.LeadingZeros8(x)
		n += lz
		break
	}
	for i := n; i < len(first)*8; i++ {
		bit := byte(0x80 >> (i % 8))
		if first[i/8]&bit != 0 || last[i/8]&bit == 0 {
			return 0, false
		}
	}
	return n, true
}

func formatKey(typ string, k []byte) string {
	switch typ {
	case NftIPv4, NftIPv6:
		a, _ := netip.AddrFromSlice(k)
		return a.String()
	case NftService:
		return strconv.Itoa(int(binary.BigEndian.Uint16(k)))
	case NftMark:
		return fmt.Sprintf("0x%08x", binary.NativeEndian.Uint32(k))
	case NftProto:
		return strconv.Itoa(int(k[0]))
	}
	return fmt.Sprintf("0x%x", k)
}

// NftElemsOverlap reports the first two elements of a sorted interval list
// that overlap, or -1.
func NftElemsOverlap(es []NftElem) int {
	for i := 1; i < len(es); i++ {
		prev := es[i-1]
		if prev.End == "" || es[i].Key < prev.End {
			return i
		}
	}
	return -1
}

// NftOp kinds.
const (
	NftAddTable = iota
	NftDelTable
	NftAddSet
	NftDelSet
	NftAddElems
	NftDelElems
	NftAddChain // creates a chain or updates its policy
	NftDelChain
	NftAddRule // appended, or inserted before handle Before
	NftReplaceRule
	NftDelRule
	NftAddObj
	NftDelObj
)

// NftOp is one change of an nftables batch.
type NftOp struct {
	Op    int
	Table NftTableKey
	Set   *NftSet   // sets and elements (the set's type and flags)
	Elems []NftElem // NftAddElems / NftDelElems
	// RawElems are the elements of a set nft declared (Set.Decl or
	// Set.Raw), as the kernel takes them.
	RawElems [][]byte
	Obj      *NftObject // NftAddObj / NftDelObj
	Chain    *NftChain  // chains; the rule's chain for rule ops
	Rule     *NftRule   // NftAddRule / NftReplaceRule: the rule to write
	// Handle is the rule replaced or deleted; Before the rule an added rule
	// goes in front of (0: at the end of the chain).
	Handle, Before uint64
}

// NftTextProblem checks that a rule's text is one nft rule and no more,
// before it goes on a line of an nft script: printable characters only (no
// newline: nft strings may span lines, and a line break ends a command),
// no `;` outside a string (it ends a command: the rest would be another;
// inside braces too, where nft's error recovery resumes at the next
// command), no `include` outside a string (it reads a file, while nft
// parses), strings closed, braces balanced. What follows a `#` outside a
// string is a comment to nft and is not looked at. It returns the offset
// of the problem and what it is, or -1.
func NftTextProblem(text string) (int, string) { return nftTextProblem(text, false) }

// NftDeclProblem is NftTextProblem for an object's declaration, whose
// block separates its settings with `;` ("ct helper { type \"ftp\"
// protocol tcp; }"): allowed inside braces there.
func NftDeclProblem(text string) (int, string) { return nftTextProblem(text, true) }

func nftTextProblem(text string, semicolonInBraces bool) (int, string) {
	if strings.TrimSpace(text) == "" {
		return 0, "empty; expected nft's words, such as \"tcp dport 22 accept\""
	}
	depth, quote, open := 0, -1, 0
	comment := false
	for i := 0; i < len(text); i++ {
		c := text[i]
		// Checked in a comment too: nft ends a comment at a line break,
		// and what follows it would be commands of their own in the
		// script the compile child runs.
		if c < 0x20 && c != '\t' || c == 0x7f {
			return i, fmt.Sprintf("control character %q; a rule is one line of nft", c)
		}
		if comment {
			continue
		}
		if quote >= 0 {
			if c == '"' {
				quote = -1
			}
			continue
		}
		switch c {
		case '"':
			quote = i
		case ';':
			if !semicolonInBraces || depth == 0 {
				return i, "\";\" ends an nft command: a rule is one command (give each rule its own entry)"
			}
		case '#':
			comment = true
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth--; depth < 0 {
				return i, "\"}\" closes no \"{\""
			}
		case 'i':
			if strings.HasPrefix(text[i:], "include") && (i == 0 || !isWordByte(text[i-1])) &&
				(i+len("include") == len(text) || !isWordByte(text[i+len("include")])) {
				return i, "include reads a file: it has no place in a rule"
			}
		}
	}
	switch {
	case quote >= 0:
		return quote, "string not closed; expected a closing \""
	case depth > 0:
		return open, "\"{\" not closed; expected a closing \"}\""
	}
	return -1, ""
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// NftTime writes a duration as nft writes a time (23d23h59m59s, 1s500ms):
// whole days, hours, minutes, seconds and milliseconds, the zero ones
// left out. nft's reader refuses some large counts of one unit
// (`timeout 2073599000ms`: "value too large"), which it takes in these
// units; below a millisecond is dropped, as nft keeps milliseconds.
func NftTime(d time.Duration) string {
	ms := d.Milliseconds()
	if ms <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		n    int64
		name string
	}{{86400000, "d"}, {3600000, "h"}, {60000, "m"}, {1000, "s"}, {1, "ms"}} {
		if ms >= u.n {
			b.WriteString(strconv.FormatInt(ms/u.n, 10) + u.name)
			ms %= u.n
		}
	}
	return b.String()
}
