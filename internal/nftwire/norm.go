package nftwire

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Expression attributes this package reads or rewrites.
const (
	lookupSet      = 1 // NFTA_LOOKUP_SET
	lookupSetID    = 4
	dynsetSetName  = 1 // NFTA_DYNSET_SET_NAME
	dynsetSetID    = 2
	dynsetExpr     = 7
	dynsetPad      = 8
	dynsetExprs    = 10
	objrefSetName  = 4 // NFTA_OBJREF_SET_NAME
	objrefSetID    = 5
	counterBytes   = 1
	counterPackets = 2
	counterPad     = 3
	quotaFlags     = 2
	quotaPad       = 3
	quotaConsumed  = 4
	quotaFDepleted = 2 // NFT_QUOTA_F_DEPLETED
	limitPad       = 6
	lastSet        = 1
	lastMsecs      = 2
	lastPad        = 3
)

// setRef returns the attribute that names a set in an expression's data,
// and the one that gives its transaction id, for the expressions that
// refer to sets.
func setRef(name string) (nameAttr, idAttr uint16, ok bool) {
	switch name {
	case "lookup":
		return lookupSet, lookupSetID, true
	case "dynset":
		return dynsetSetName, dynsetSetID, true
	case "objref":
		return objrefSetName, objrefSetID, true
	}
	return 0, 0, false
}

// expr is one expression of a list: its name and its data's attributes.
type expr struct {
	name string
	data []attr
	// other are the expression's attributes besides its name and data,
	// kept in place (none today).
	attrs []attr
}

func parseExpr(b []byte) (expr, error) {
	as, err := parseAttrs(b)
	if err != nil {
		return expr{}, err
	}
	var e expr
	e.attrs = as
	for _, a := range as {
		switch kind(a) {
		case nftaExprName:
			e.name = cstring(a.Data)
		case nftaExprData:
			if e.data, err = parseAttrs(a.Data); err != nil {
				return expr{}, fmt.Errorf("expression %s: %w", e.name, err)
			}
		}
	}
	return e, nil
}

// encode writes the expression with its data replaced by data.
func (e expr) encode(data []attr) ([]byte, error) {
	d, err := marshal(data)
	if err != nil {
		return nil, fmt.Errorf("expression %s: %w", e.name, err)
	}
	out := make([]attr, len(e.attrs))
	for i, a := range e.attrs {
		out[i] = attr{Type: a.Type, Data: a.Data}
		if kind(a) == nftaExprData {
			out[i].Data = d
		}
	}
	return marshal(out)
}

// mapExprs rewrites each expression of a list with f, which returns the
// expression's new data attributes. Attributes other than NFTA_LIST_ELEM
// are kept as they are, and so are, undecoded, the expressions whose name
// touches (when not nil) says f leaves alone.
func mapExprs(list []byte, touches func(name string) bool, f func(e expr) ([]attr, error)) ([]byte, error) {
	as, err := parseAttrs(list)
	if err != nil {
		return nil, err
	}
	out := make([]attr, len(as))
	for i, a := range as {
		out[i] = attr{Type: a.Type, Data: a.Data}
		if kind(a) != nftaListElem {
			continue
		}
		if touches != nil {
			name, err := exprName(a.Data)
			if err != nil {
				return nil, err
			}
			if !touches(name) {
				continue
			}
		}
		e, err := parseExpr(a.Data)
		if err != nil {
			return nil, err
		}
		data, err := f(e)
		if err != nil {
			return nil, err
		}
		if out[i].Data, err = e.encode(data); err != nil {
			return nil, err
		}
	}
	return marshal(out)
}

// ReferencedSets returns the sets an expression list refers to, each once,
// in the order of their first reference.
func ReferencedSets(exprs []byte) ([]string, error) {
	var out []string
	err := eachSetRef(exprs, func(expr, set string) {
		if !slices.Contains(out, set) {
			out = append(out, set)
		}
	})
	return out, err
}

// DynsetSets returns the sets that an expression list changes from the
// packet path (add @s, update @s, delete @s): their contents change without
// a commit.
func DynsetSets(exprs []byte) ([]string, error) {
	var out []string
	err := eachSetRef(exprs, func(expr, set string) {
		if expr == "dynset" {
			out = append(out, set)
		}
	})
	return out, err
}

// SetRefs returns, in one walk of an expression list, what ReferencedSets
// and DynsetSets return.
func SetRefs(exprs []byte) (refs, dynsets []string, err error) {
	err = eachSetRef(exprs, func(expr, set string) {
		if !slices.Contains(refs, set) {
			refs = append(refs, set)
		}
		if expr == "dynset" {
			dynsets = append(dynsets, set)
		}
	})
	return refs, dynsets, err
}

// eachSetRef calls fn for each expression of a list that names a set,
// without decoding more than names: the reading of every rule of a table
// goes through it.
func eachSetRef(exprs []byte, fn func(expr, set string)) error {
	return each(exprs, func(typ uint16, e []byte) error {
		if typ != nftaListElem {
			return nil
		}
		var name string
		var data []byte
		if err := each(e, func(typ uint16, v []byte) error {
			switch typ {
			case nftaExprName:
				name = cstring(v)
			case nftaExprData:
				data = v
			}
			return nil
		}); err != nil {
			return err
		}
		nameAttr, _, ok := setRef(name)
		if !ok {
			return nil
		}
		return each(data, func(typ uint16, v []byte) error {
			if typ == nameAttr {
				fn(name, cstring(v))
			}
			return nil
		})
	})
}

// SetRef is how a batch refers to a set it creates under a name the kernel
// chooses: the name it was created with ("__set%d") and its transaction id.
type SetRef struct {
	Name string
	ID   uint32
}

// RewriteSetRefs makes the expressions refer to the sets of ids as the
// batch created them: an anonymous set gets its name from the kernel, so a
// rule in the same batch finds it by its transaction id. The kernel looks a
// set up by name first, and "__set%d" is no set's name.
func RewriteSetRefs(exprs []byte, ids map[string]SetRef) ([]byte, error) {
	if len(ids) == 0 {
		return exprs, nil
	}
	return mapExprs(exprs, nil, func(e expr) ([]attr, error) {
		n, idAttr, ok := setRef(e.name)
		if !ok {
			return e.data, nil
		}
		a, ok := find(e.data, n)
		if !ok {
			return e.data, nil
		}
		ref, ok := ids[cstring(a.Data)]
		if !ok {
			return e.data, nil
		}
		out := make([]attr, 0, len(e.data)+1)
		for _, d := range e.data {
			switch kind(d) {
			case n:
				out = append(out, attr{Type: d.Type, Data: zstr(ref.Name)})
			case idAttr:
			default:
				out = append(out, d)
			}
		}
		return append(out, attr{Type: idAttr, Data: putBE32(ref.ID)}), nil
	})
}

// Attributes of the expressions whose dump the kernel does not take back.
const (
	exthdrDreg    = 1 // NFTA_EXTHDR_DREG
	exthdrType    = 2
	exthdrFlags   = 5
	exthdrOp      = 6
	exthdrSreg    = 7
	dynsetTimeout = 6
	osfFlags      = 3 // NFTA_OSF_FLAGS
)

// dropZero returns attributes without the one of kind k when it is n zero
// bytes.
func dropZero(as []attr, k uint16, n int) []attr {
	out := make([]attr, 0, len(as))
	for _, a := range as {
		if kind(a) == k && len(a.Data) == n && bytes.Count(a.Data, []byte{0}) == n {
			continue
		}
		out = append(out, a)
	}
	return out
}

// WriteObjData is an object's data as a batch sends it: as WriteExprs does
// for the expression of the object's type.
func WriteObjData(typ uint32, data []byte) ([]byte, error) {
	name, ok := objExpr[typ]
	if !ok {
		return data, nil
	}
	as, err := parseAttrs(data)
	if err != nil {
		return nil, err
	}
	w, err := writeExpr(expr{name: name, data: as})
	if err != nil {
		return nil, err
	}
	return marshal(w)
}

// WriteExprs is an expression list as a batch sends it: what the kernel
// dumped, but the attributes a dump gives and the same kernel refuses in a
// new rule. An exthdr that sets a TCP option dumps its flags (0), which
// its init refuses (EINVAL); one that strips an option dumps its offset,
// length and flags too. A dynset dumps its timeout (0 when none), which a
// set without the timeout flag refuses (EOPNOTSUPP). osf dumps flags 0,
// which it refuses; a quota of 0 bytes dumps itself depleted, a flag a new
// quota may not have. The kernel makes the
// same expression from what is left, and dumps it as before: the
// differential test (nft -f against our batch) holds that.
func WriteExprs(list []byte) ([]byte, error) {
	return mapExprs(list, nil, writeExpr)
}

func writeExpr(e expr) ([]attr, error) {
	switch e.name {
	case "osf":
		// Its dump gives flags 0, which its init refuses (only
		// NFT_OSF_F_VERSION may be given).
		return dropZero(e.data, osfFlags, 4), nil
	case "quota":
		// A quota of 0 bytes is spent from the start: its dump says so
		// (NFT_QUOTA_F_DEPLETED), a flag a new quota may not carry.
		out := make([]attr, 0, len(e.data))
		for _, d := range e.data {
			if kind(d) == quotaFlags {
				if v, ok := be32(d.Data); ok {
					d.Data = putBE32(v &^ quotaFDepleted)
				}
			}
			out = append(out, d)
		}
		return out, nil
	case "exthdr":
		_, sreg := find(e.data, exthdrSreg)
		_, dreg := find(e.data, exthdrDreg)
		out := make([]attr, 0, len(e.data))
		for _, d := range e.data {
			switch k := kind(d); {
			case sreg && k == exthdrFlags:
				continue
			case !sreg && !dreg && k != exthdrType && k != exthdrOp:
				continue
			}
			out = append(out, d)
		}
		return out, nil
	case "dynset":
		out := make([]attr, 0, len(e.data))
		for _, d := range e.data {
			switch kind(d) {
			case dynsetTimeout:
				if v, ok := be64(d.Data); ok && v == 0 {
					continue
				}
			case dynsetPad:
				continue
			case dynsetExpr:
				x, err := parseExpr(d.Data)
				if err != nil {
					return nil, err
				}
				xd, err := writeExpr(x)
				if err != nil {
					return nil, err
				}
				if d.Data, err = x.encode(xd); err != nil {
					return nil, err
				}
			case dynsetExprs:
				b, err := WriteExprs(d.Data)
				if err != nil {
					return nil, err
				}
				d.Data = b
			}
			out = append(out, d)
		}
		return out, nil
	}
	return e.data, nil
}

// normalExprs is the normal form of an expression list: stateful values
// zeroed (counters, quota consumed, last use), padding dropped, anonymous
// sets named by their index in anon.
//
// An expression that normalExpr leaves as it is keeps its bytes, undecoded:
// most of a rule's expressions (payload, cmp, meta, immediate...) are such,
// and decoding and encoding them again was most of the cost of reading a
// table of a thousand rules. The bytes are the same either way, since the
// kernel lays attributes out as the encoder does (TestNormalFormStable,
// TestNormalExprsSkipsWhatItKeeps).
func normalExprs(list []byte, anon map[string]int) ([]byte, error) {
	return mapExprs(list, normalizes, func(e expr) ([]attr, error) { return normalExpr(e, anon) })
}

// normalizes reports whether normalExpr may change an expression of a
// name: one that names a set, or holds state or padding.
func normalizes(name string) bool {
	if _, _, ok := setRef(name); ok {
		return true
	}
	switch name {
	case "counter", "quota", "limit", "last":
		return true
	}
	return false
}

// exprName returns an expression's name without decoding its data.
func exprName(b []byte) (string, error) {
	name := ""
	err := each(b, func(typ uint16, v []byte) error {
		if typ == nftaExprName {
			name = cstring(v)
		}
		return nil
	})
	return name, err
}

var zero64 = make([]byte, 8)

func normalExpr(e expr, anon map[string]int) ([]attr, error) {
	out := make([]attr, 0, len(e.data))
	nameAttr, idAttr, refers := setRef(e.name)
	for _, d := range e.data {
		k := kind(d)
		switch {
		case refers && k == idAttr:
			continue
		case refers && k == nameAttr:
			if i, ok := anon[cstring(d.Data)]; ok {
				d.Data = []byte(fmt.Sprintf("\x00anonymous %d", i))
			}
		case e.name == "counter" && (k == counterBytes || k == counterPackets):
			d.Data = zero64
		case e.name == "counter" && k == counterPad, e.name == "quota" && k == quotaPad,
			e.name == "limit" && k == limitPad, e.name == "last" && k == lastPad, e.name == "dynset" && k == dynsetPad:
			continue
		case e.name == "quota" && k == quotaFlags:
			if v, ok := be32(d.Data); ok {
				d.Data = putBE32(v &^ quotaFDepleted)
			}
		case e.name == "quota" && k == quotaConsumed:
			d.Data = zero64
		case e.name == "last" && k == lastSet:
			d.Data = make([]byte, len(d.Data))
		case e.name == "last" && k == lastMsecs:
			continue
		case e.name == "dynset" && k == dynsetExpr:
			x, err := parseExpr(d.Data)
			if err != nil {
				return nil, err
			}
			xd, err := normalExpr(x, anon)
			if err != nil {
				return nil, err
			}
			if d.Data, err = x.encode(xd); err != nil {
				return nil, err
			}
		case e.name == "dynset" && k == dynsetExprs:
			b, err := normalExprs(d.Data, anon)
			if err != nil {
				return nil, err
			}
			d.Data = b
		}
		out = append(out, d)
	}
	return out, nil
}

// WriteElem is an element as a batch sends it again: what the kernel dumped,
// but its expiration (the time left, which is state) and padding.
func WriteElem(elem []byte) ([]byte, error) {
	as, err := parseAttrs(elem)
	if err != nil {
		return nil, err
	}
	out := make([]attr, 0, len(as))
	for _, a := range as {
		switch kind(a) {
		case nftaSetElemExpiration, nftaSetElemPad:
			continue
		}
		out = append(out, attr{Type: a.Type, Data: a.Data})
	}
	return marshal(out)
}

// normalElem is an element's normal form: its write form with the state of
// its expressions (a counter per element) zeroed.
func normalElem(elem []byte) ([]byte, error) {
	as, err := parseAttrs(elem)
	if err != nil {
		return nil, err
	}
	var out []attr
	for _, a := range as {
		switch kind(a) {
		case nftaSetElemExpiration, nftaSetElemPad:
			continue
		case nftaSetElemExpr:
			if a.Data, err = normalOneExpr(a.Data); err != nil {
				return nil, err
			}
		case nftaSetElemExpressions:
			if a.Data, err = normalExprs(a.Data, nil); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return marshal(out)
}

// normalOneExpr is one expression's normal form (an element's or a set
// spec's single expression attribute).
func normalOneExpr(data []byte) ([]byte, error) {
	x, err := parseExpr(data)
	if err != nil {
		return nil, err
	}
	xd, err := normalExpr(x, nil)
	if err != nil {
		return nil, err
	}
	return x.encode(xd)
}

// normalSpec is a set spec's normal form: the state of its expressions
// zeroed.
func normalSpec(spec []byte) ([]byte, error) {
	as, err := parseAttrs(spec)
	if err != nil {
		return nil, err
	}
	var out []attr
	for _, a := range as {
		switch kind(a) {
		case nftaSetExpr:
			if a.Data, err = normalOneExpr(a.Data); err != nil {
				return nil, err
			}
		case nftaSetExpressions:
			if a.Data, err = normalExprs(a.Data, nil); err != nil {
				return nil, err
			}
		}
		out = append(out, a)
	}
	return marshal(out)
}

// Fingerprint is the hash of a rule's normal form: its expressions with
// stateful values zeroed, nft's user data (the comment; our marker is not
// part of it), and each anonymous set it refers to by content (its spec and
// its elements, in byte order), in the order of reference. Two rules nft
// lists the same have the same fingerprint: the kernel holds nothing else
// of a rule. It is the hash of the shape (ShapeFingerprint) and of the
// anonymous sets' elements.
func Fingerprint(exprs, udata []byte, sets []model.NftAnonSet) (string, error) {
	shape, order, err := shapeFingerprint(exprs, udata, sets)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	put([]byte("nftables rule v2"))
	put([]byte(shape))
	for _, s := range order {
		if flags, _ := specFlags(s.Spec); flags&SetEval != 0 {
			// A meter's set: the packet path fills it, its elements
			// are state.
			h.Write([]byte{0})
			continue
		}
		es := make([][]byte, len(s.Elems))
		for i, e := range s.Elems {
			if es[i], err = normalElem(e); err != nil {
				return "", fmt.Errorf("anonymous set %s: %w", s.Name, err)
			}
		}
		slices.SortFunc(es, bytes.Compare)
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(es))))
		for _, e := range es {
			put(e)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// ShapeFingerprint is the hash of a rule's normal form without the
// elements of its anonymous sets (their specs are in): what a reading can
// check without dumping each anonymous set. An anonymous set of nft's
// (constant) takes no element once its rule is in the kernel, so a rule
// whose shape is the one written still has the elements written; a rule
// replaced behind our back carries no marker.
func ShapeFingerprint(exprs, udata []byte, sets []model.NftAnonSet) (string, error) {
	shape, _, err := shapeFingerprint(exprs, udata, sets)
	return shape, err
}

// ShapeFingerprintOf is ShapeFingerprint for a caller that has the
// expressions' ReferencedSets already.
func ShapeFingerprintOf(exprs, udata []byte, refs []string, sets []model.NftAnonSet) (string, error) {
	shape, _, err := shapeOf(exprs, udata, refs, sets)
	return shape, err
}

func shapeFingerprint(exprs, udata []byte, sets []model.NftAnonSet) (string, []*model.NftAnonSet, error) {
	refs, err := ReferencedSets(exprs)
	if err != nil {
		return "", nil, err
	}
	return shapeOf(exprs, udata, refs, sets)
}

func shapeOf(exprs, udata []byte, refs []string, sets []model.NftAnonSet) (string, []*model.NftAnonSet, error) {
	byName := make(map[string]*model.NftAnonSet, len(sets))
	for i := range sets {
		byName[sets[i].Name] = &sets[i]
	}
	anon := map[string]int{}
	var order []*model.NftAnonSet
	for _, r := range refs {
		if s := byName[r]; s != nil {
			anon[r] = len(order)
			order = append(order, s)
		}
	}
	ne, err := normalExprs(exprs, anon)
	if err != nil {
		return "", nil, err
	}
	h := sha256.New()
	put := func(b []byte) {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(b))))
		h.Write(b)
	}
	put([]byte("nftables rule shape v1"))
	put(ne)
	put(udata)
	for _, s := range order {
		spec, err := normalSpec(s.Spec)
		if err != nil {
			return "", nil, fmt.Errorf("anonymous set %s: %w", s.Name, err)
		}
		put(spec)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), order, nil
}

// specFlags returns a set spec's NFTA_SET_FLAGS.
func specFlags(spec []byte) (uint32, bool) {
	as, err := parseAttrs(spec)
	if err != nil {
		return 0, false
	}
	if a, ok := find(as, nftaSetFlags); ok {
		return be32(a.Data)
	}
	return 0, false
}

// Compile makes the compiled form of a rule the kernel dumped: its
// expressions, nft's user data, and the anonymous sets it refers to, which
// anon returns (the set and its elements; nil for a named set). The marker
// is netreconcile's, if the rule carries one.
func Compile(r *Rule, anon func(name string) (*Set, [][]byte)) (*model.NftCompiled, Marker, error) {
	udata, m := SplitUData(r.UData)
	c := &model.NftCompiled{Exprs: r.Exprs, UData: udata}
	refs, err := ReferencedSets(r.Exprs)
	if err != nil {
		return nil, Marker{}, err
	}
	for _, name := range refs {
		s, elems := anon(name)
		if s == nil || !s.Anonymous() {
			continue
		}
		as := model.NftAnonSet{Name: name, Spec: s.Spec(), Elems: make([][]byte, 0, len(elems))}
		for _, e := range elems {
			w, err := WriteElem(e)
			if err != nil {
				return nil, Marker{}, fmt.Errorf("anonymous set %s: %w", name, err)
			}
			as.Elems = append(as.Elems, w)
		}
		c.Sets = append(c.Sets, as)
	}
	if c.Fingerprint, err = Fingerprint(c.Exprs, c.UData, c.Sets); err != nil {
		return nil, Marker{}, err
	}
	if c.ShapeFP, err = ShapeFingerprint(c.Exprs, c.UData, c.Sets); err != nil {
		return nil, Marker{}, err
	}
	if len(r.Compat) > 0 {
		// xt matches of iptables-nft: folded into the hash, so that
		// such a rule never equals one nft compiled.
		h := sha256.Sum256(append([]byte(c.Fingerprint+"compat"), r.Compat...))
		c.Fingerprint = hex.EncodeToString(h[:16])
	}
	return c, m, nil
}

// hash16 is the hex of the first 16 bytes of a SHA-256.
func hash16(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(len(p))))
		h.Write(p)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// SpecFingerprint is the hash of a set spec's normal form.
func SpecFingerprint(spec []byte) (string, error) {
	n, err := normalSpec(spec)
	if err != nil {
		return "", err
	}
	return hash16([]byte("nftables set v1"), n), nil
}

// ElemFingerprint is the hash of an element's normal form (its write form
// with its expressions' state zeroed).
func ElemFingerprint(elem []byte) (string, error) {
	n, err := normalElem(elem)
	if err != nil {
		return "", err
	}
	return hash16(n), nil
}

// objExpr names the expression whose attributes an object's data are,
// for the stateful ones whose state normalExpr zeroes.
var objExpr = map[uint32]string{1: "counter", 2: "quota", 4: "limit", 5: "connlimit"}

// ObjFingerprint is the hash of an object's normal form: its type, its
// data with counters' values and quotas' use zeroed, its user data (nft's
// comment).
func ObjFingerprint(typ uint32, data, udata []byte) (string, error) {
	if name, ok := objExpr[typ]; ok {
		as, err := parseAttrs(data)
		if err != nil {
			return "", err
		}
		nd, err := normalExpr(expr{name: name, data: as}, nil)
		if err != nil {
			return "", err
		}
		if data, err = marshal(nd); err != nil {
			return "", err
		}
	}
	return hash16([]byte("nftables object v1"), putBE32(typ), data, udata), nil
}

// RawSet makes the raw form of a dumped set and its elements. The
// elements' identities (Keys) and expirations are kept for a set whose
// elements may expire or come from the packet path (its timeout or dynamic
// flag, or keys true: a rule of its table changes it): those are the sets
// whose elements the diff may leave to the kernel.
func RawSet(s *Set, elems [][]byte, keys bool) (*model.NftRawSet, error) {
	r := &model.NftRawSet{Spec: s.Spec(), Elems: make([][]byte, 0, len(elems)), ElemFPs: make([]string, 0, len(elems))}
	var err error
	if r.SpecFP, err = SpecFingerprint(r.Spec); err != nil {
		return nil, fmt.Errorf("set %s: %w", s.Name, err)
	}
	keys = keys || s.Flags&(SetTimeout|SetEval) != 0
	if keys {
		r.Keys = make([]string, 0, len(elems))
	}
	for i, e := range elems {
		w, err := WriteElem(e)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		fp, err := ElemFingerprint(w)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		r.Elems, r.ElemFPs = append(r.Elems, w), append(r.ElemFPs, fp)
		if !keys {
			continue
		}
		id, err := ElemIdentity(w)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		r.Keys = append(r.Keys, id)
		if s.Flags&SetTimeout == 0 {
			continue
		}
		exp, err := ElemExpires(e)
		if err != nil {
			return nil, fmt.Errorf("set %s: %w", s.Name, err)
		}
		if exp {
			if r.Expiring == nil {
				r.Expiring = make([]bool, len(elems))
			}
			r.Expiring[i] = true
		}
	}
	return r, nil
}

// RawObj makes the raw form of a dumped object.
func RawObj(o *Obj) (*model.NftRawObj, error) {
	fp, err := ObjFingerprint(o.Type, o.Data, o.UData)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", o.Name, err)
	}
	return &model.NftRawObj{Type: o.Type, Data: o.Data, UData: o.UData, Fingerprint: fp}, nil
}
