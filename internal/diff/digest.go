package diff

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"math"
	"reflect"
	"sort"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Digests for saved plans (saved.go): what an op writes, and the kernel
// state it was planned from, each as an HMAC-SHA256 keyed by the plan's
// random salt. The key matters because an op can carry a secret (the
// private key a WireGuard device op writes, a preshared key): a plain hash
// of a 32-byte key reveals nothing either, but the salt also keeps two
// plans, or two hosts with the same key, from being told apart by their
// digests.
//
// Objects are encoded by reflection, field by field in declaration order
// (maps in key order), so a field added to the model is covered without a
// line here. What is left out, and why:
//   - a field named Origin (a string or a model.Origin), and an nftables
//     text's NftSource: where the file declared the object
//     (FILE:LINE:COL), which moves with an unrelated edit and with the
//     directory a file is read from; the files' own digests cover edits;
//   - what the kernel changes by itself (volatile, below), in the kernel's
//     objects only: a WireGuard peer's handshake, counters and roaming
//     endpoint, an IPv6 address's duplicate address detection in progress;
//   - through an nftables message, its set's elements and its chain's
//     rules: the message carries the elements and the rule it writes, and
//     hashing the whole set per element op would cost the square of its
//     size; likewise a WireGuard op's device is hashed without its peers
//     (a peer op carries its peer).
type digester struct {
	key []byte
}

// informational are the fields that say where a secret came from (the
// desired side only): the secret's own digest is an input of the plan
// (SecretInputs), and a file named by a relative path is found from where
// the configuration was read, which a check-mode run and the real one may
// not share (the Ansible module plans an inline configuration in a
// temporary directory).
var informational = map[reflect.Type]map[string]bool{
	reflect.TypeFor[model.WireGuard]():     {"PrivateKeyFile": true, "PrivateKeyCredential": true},
	reflect.TypeFor[model.WireGuardPeer](): {"PresharedKeyFile": true},
}

// volatile are the fields of kernel objects that the kernel changes on its
// own: a plan does not go stale by them.
var volatile = map[reflect.Type]map[string]bool{
	reflect.TypeFor[model.WireGuardPeer](): {"LastHandshake": true, "RxBytes": true, "TxBytes": true, "Endpoint": true},
	reflect.TypeFor[model.Address]():       {"Tentative": true},
}

var (
	secretType = reflect.TypeFor[model.Secret]()
	originType = reflect.TypeFor[model.Origin]()
	nftOpType  = reflect.TypeFor[model.NftOp]()
	// Where a rule's or an element's text is in the file.
	nftSourceType  = reflect.TypeFor[model.NftSource]()
	nftSourcesType = reflect.TypeFor[[]model.NftSource]()
	wgOpType       = reflect.TypeFor[WireGuardOp]()
	timeType       = reflect.TypeFor[time.Time]()
	textMarshal    = reflect.TypeFor[encoding.TextMarshaler]()
)

// maxDepth bounds the walk: the model's objects are shallow, and a cycle
// (which none has) stops here instead of looping.
const maxDepth = 64

type walker struct {
	h       hash.Hash
	kernel  bool // a kernel object: volatile fields left out
	scratch [8]byte
}

func (d *digester) sum(kernel bool, v any) string {
	w := &walker{h: hmac.New(sha256.New, d.key), kernel: kernel}
	w.value(reflect.ValueOf(v), 0, "")
	return "hmac-sha256:" + hex.EncodeToString(w.h.Sum(nil))
}

// opDigest is the digest of what an op writes: its visible fields and
// every object it carries.
func (d *digester) opDigest(op *Op) string { return d.sum(false, op) }

// kernelDigest is the digest of a kernel object (nil: absent).
func (d *digester) kernelDigest(v any) string {
	if v == nil || reflect.ValueOf(v).IsNil() {
		return "absent"
	}
	return d.sum(true, v)
}

func (w *walker) u64(x uint64) {
	binary.LittleEndian.PutUint64(w.scratch[:], x)
	w.h.Write(w.scratch[:])
}

func (w *walker) str(s string) {
	w.u64(uint64(len(s)))
	w.h.Write([]byte(s))
}

// value writes v; skip names a field of v's struct type to leave out (the
// elements of an nftables message's set, and so on).
func (w *walker) value(v reflect.Value, depth int, skip string) {
	if depth > maxDepth {
		w.str("\x00deep")
		return
	}
	if !v.IsValid() {
		w.str("\x00nil")
		return
	}
	t := v.Type()
	switch {
	case t == secretType:
		// A secret's bytes, keyed: the only reason a digest needs a key.
		s := model.Secret{}
		if v.CanInterface() {
			s = v.Interface().(model.Secret)
		}
		b := s.Bytes()
		w.u64(uint64(b2i(s.IsSet())))
		w.h.Write(b[:])
		return
	case t == timeType:
		if v.CanInterface() {
			w.u64(uint64(v.Interface().(time.Time).UnixNano()))
		}
		return
	case t.Kind() != reflect.Pointer && t.Kind() != reflect.Interface && t.Implements(textMarshal) && v.CanInterface():
		// netip.Addr, netip.Prefix, netip.AddrPort, Disruption.
		b, err := v.Interface().(encoding.TextMarshaler).MarshalText()
		if err != nil {
			w.str("\x00err:" + err.Error())
			return
		}
		w.str(string(b))
		return
	}
	switch t.Kind() {
	case reflect.Bool:
		w.u64(uint64(b2i(v.Bool())))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		w.u64(uint64(v.Int()))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		w.u64(v.Uint())
	case reflect.Float32, reflect.Float64:
		w.u64(math.Float64bits(v.Float()))
	case reflect.String:
		w.str(v.String())
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && v.IsNil() {
			w.str("\x00nil")
			return
		}
		w.u64(uint64(v.Len()))
		for i := range v.Len() {
			w.value(v.Index(i), depth+1, "")
		}
	case reflect.Map:
		if v.IsNil() {
			w.str("\x00nil")
			return
		}
		// Keys in the order of their own encoding.
		type kv struct {
			k string
			v reflect.Value
		}
		var kvs []kv
		for it := v.MapRange(); it.Next(); {
			kw := &walker{h: sha256.New(), kernel: w.kernel}
			kw.value(it.Key(), depth+1, "")
			kvs = append(kvs, kv{string(kw.h.Sum(nil)), it.Value()})
		}
		sort.Slice(kvs, func(i, j int) bool { return kvs[i].k < kvs[j].k })
		w.u64(uint64(len(kvs)))
		for _, e := range kvs {
			w.str(e.k)
			w.value(e.v, depth+1, "")
		}
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			w.str("\x00nil")
			return
		}
		w.str("\x00ptr")
		w.value(v.Elem(), depth+1, skip)
	case reflect.Struct:
		w.str(t.String())
		vol := map[string]bool(nil)
		if w.kernel {
			vol = volatile[t]
		}
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Name == skip || vol[f.Name] || informational[t][f.Name] || f.Name == "Origin" && (f.Type.Kind() == reflect.String || f.Type == originType) ||
				f.Type == nftSourceType || f.Type == nftSourcesType {
				continue
			}
			sub := ""
			switch {
			case t == nftOpType && f.Name == "Set":
				sub = "Elems"
			case t == nftOpType && f.Name == "Chain":
				sub = "Rules"
			case t == wgOpType && f.Name == "Device":
				sub = "Peers"
			}
			w.str(f.Name)
			w.value(v.Field(i), depth+1, sub)
		}
	default:
		// Channels and functions: the model has none.
		w.str("\x00" + t.Kind().String())
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
