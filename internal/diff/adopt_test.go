package diff_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/model"
)

// adoptBases declares one link x of each kind the file can adopt, with the
// links it needs; the kernel holds each as declared, marked.
var adoptBases = map[string]string{
	model.KindVeth:      "x: {kind: veth, veth: {peer: xp}}",
	model.KindBridge:    "x: {kind: bridge}",
	model.KindVXLAN:     "x: {kind: vxlan, vxlan: {id: 5, remote: 192.0.2.1, local: 192.0.2.2, dev: eth0, ttl: 9}}",
	model.KindDummy:     "x: {kind: dummy}",
	model.KindIPVlan:    "x: {kind: ipvlan, ipvlan: {parent: eth0}}",
	model.KindIPIP:      "x: {kind: ipip, ipip: {remote: 192.0.2.1, local: 192.0.2.2, ttl: 9}}",
	model.KindIP6Tnl:    "x: {kind: ip6tnl, ip6tnl: {remote: '2001:db8::1', local: '2001:db8::2'}}",
	model.KindWireGuard: "x: {kind: wireguard, wireguard: {private-key-file: KEYFILE, listen-port: 51820}}",
	model.KindVLAN:      "x: {kind: vlan, vlan: {parent: eth0, id: 10}}",
	model.KindMACVlan:   "x: {kind: macvlan, macvlan: {parent: eth0}}",
	model.KindVRF:       "x: {kind: vrf, vrf: {table: 10}}",
	model.KindBond:      "x: {kind: bond}\n  m0: {kind: veth, master: x, veth: {peer: m1}}\n  m1: {kind: veth, veth: {peer: m0}}",
}

// adoptStrings are the values a string attribute is tried with: link names
// and every mode and protocol word of the schema.
var adoptStrings = append([]string{"", "eth1", "xq", model.VLAN8021Q, model.VLAN8021AD,
	model.MACVlanPrivate, model.MACVlanVEPA, model.MACVlanBridge, model.MACVlanPassthru,
	model.IPVlanL2, model.IPVlanL3, model.IPVlanL3S, "ipip", "ip6ip6", "ipip6", "any"}, model.BondModes...)

var adoptAddrs = []netip.Addr{{}, netip.MustParseAddr("192.0.2.99"), netip.MustParseAddr("2001:db8::99"), netip.MustParseAddr("239.1.1.1"), netip.MustParseAddr("ff05::1")}

// mutation changes the kernel's copy of x.
type mutation struct {
	what string
	do   func(*model.Link)
}

// attributeMutations lists a change of every attribute of the kind's block
// of l (the field of Link that is a pointer to a struct, set for its kind),
// found by reflection so that an attribute added to a block is tried too:
// each other value of a bool, an integer one up and zero, each string of
// adoptStrings, each address of adoptAddrs, a pointer to a struct taken
// away and, when set, each of its own fields.
func attributeMutations(l *model.Link) []mutation {
	var ms []mutation
	lv := reflect.ValueOf(l).Elem()
	for i := range lv.NumField() {
		f := lv.Type().Field(i)
		if f.Type.Kind() != reflect.Pointer || f.Type.Elem().Kind() != reflect.Struct || lv.Field(i).IsNil() || f.Name == "WireGuard" {
			continue
		}
		ms = append(ms, fieldMutations([]int{i}, f.Name, lv.Field(i).Elem())...)
	}
	return ms
}

func fieldMutations(path []int, name string, v reflect.Value) []mutation {
	var ms []mutation
	// set applies to the kernel's link the change of the field at path
	// (pointers to structs followed, and copied, on the way).
	set := func(at []int, what string, val func(reflect.Value)) mutation {
		at = slices.Clone(at)
		return mutation{what, func(l *model.Link) {
			cur := reflect.ValueOf(l).Elem()
			for _, i := range at[:len(at)-1] {
				p := cur.Field(i)
				c := reflect.New(p.Type().Elem())
				c.Elem().Set(p.Elem())
				p.Set(c)
				cur = c.Elem()
			}
			val(cur.Field(at[len(at)-1]))
		}}
	}
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if !f.IsExported() {
			continue
		}
		at, what := append(slices.Clone(path), i), name+"."+f.Name
		switch {
		case f.Type == reflect.TypeFor[netip.Addr]():
			for _, a := range adoptAddrs {
				if a != fv.Interface().(netip.Addr) {
					ms = append(ms, set(at, fmt.Sprintf("%s %v", what, a), func(x reflect.Value) { x.Set(reflect.ValueOf(a)) }))
				}
			}
		case f.Type.Kind() == reflect.Bool:
			ms = append(ms, set(at, what+" flipped", func(x reflect.Value) { x.SetBool(!x.Bool()) }))
		case fv.CanUint():
			ms = append(ms, set(at, what+" +1", func(x reflect.Value) { x.SetUint(x.Uint() + 1) }))
			if !fv.IsZero() {
				ms = append(ms, set(at, what+" 0", func(x reflect.Value) { x.SetUint(0) }))
			}
		case fv.CanInt():
			ms = append(ms, set(at, what+" +1", func(x reflect.Value) { x.SetInt(x.Int() + 1) }))
			if !fv.IsZero() {
				ms = append(ms, set(at, what+" 0", func(x reflect.Value) { x.SetInt(0) }))
			}
		case f.Type.Kind() == reflect.String:
			for _, s := range adoptStrings {
				if s != fv.String() {
					ms = append(ms, set(at, fmt.Sprintf("%s %q", what, s), func(x reflect.Value) { x.SetString(s) }))
				}
			}
		case f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && !fv.IsNil():
			ms = append(ms, set(at, what+" nil", func(x reflect.Value) { x.Set(reflect.Zero(x.Type())) }))
			ms = append(ms, fieldMutations(at, what, fv.Elem())...)
		}
	}
	return ms
}

// adoptKernel is the kernel holding the file's links as declared, marked.
func adoptKernel(d *model.State) *kernel {
	k := newKernel().
		link(model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}).
		link(model.Link{Name: "eth1", Kind: model.KindDevice, Up: true})
	for _, n := range d.SortedLinkNames() {
		w := d.Links[n]
		if w.Kind == model.KindDevice {
			continue
		}
		l := cloneLink(w)
		l.Owned, l.Adopt, l.Origin = true, false, ""
		l.Lower = l.Parent()
		if l.VXLAN != nil && l.VXLAN.Dev != "" && l.MTU == 0 {
			l.MTU = 1450 // its device's 1500 less the encapsulation, as made
		}
		if l.Veth != nil {
			l.Veth.PeerNSID = -1
		}
		if l.WireGuard != nil {
			l.WireGuard = &model.WireGuard{PublicKey: w.WireGuard.PublicKey, ListenPort: w.WireGuard.ListenPort, Implementation: "kernel"}
		}
		k.link(*l)
	}
	if _, ok := d.Links["xp"]; !ok && d.Links["x"].Veth != nil {
		k.link(model.Link{Name: "xp", Kind: model.KindVeth, Owned: true, Up: true, Veth: &model.Veth{Peer: "x", PeerNSID: -1}})
	}
	return k
}

// cloneLink copies a link and its kind's block.
func cloneLink(l *model.Link) *model.Link {
	c := *l
	v := reflect.ValueOf(&c).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Struct && !f.IsNil() {
			p := reflect.New(f.Type().Elem())
			p.Elem().Set(f.Elem())
			f.Set(p)
		}
	}
	return &c
}

// recreates reports whether the plan deletes or recreates the link name.
func recreates(p *diff.Plan, name string) bool {
	if p == nil {
		return false
	}
	for _, op := range p.Ops {
		if op.Kind == diff.KindLink && op.ID == name && (op.Action == diff.Replace || op.Action == diff.Delete) {
			return true
		}
	}
	return false
}

// TestAdoptedLinkIsNeverRecreated: every change of the kernel's copy of a
// link that makes the plan recreate it while netreconcile owns it (another
// kind, or any attribute of its kind's block) is, on a link the file
// adopts, a conflict that names it and keeps it. The link carries the
// marker, as an adopted link does from its first apply on: the file's
// adopt is what says it is adopted. Found in review: an adopted vxlan whose
// remote changed was recreated on its second apply.
func TestAdoptedLinkIsNeverRecreated(t *testing.T) {
	recreating := map[string]int{}
	keyFile := filepath.Join(t.TempDir(), "wg.key")
	if err := os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{9}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kind := range model.Kinds {
		if kind == model.KindDevice {
			continue
		}
		base, ok := adoptBases[kind]
		if !ok {
			t.Errorf("kind %s has no base link to adopt: add it to adoptBases", kind)
			continue
		}
		file := "links:\n  eth0: {kind: device}\n  eth1: {kind: device}\n  " + strings.Replace(base, "KEYFILE", keyFile, 1) + "\n"
		own, adopt := parse(t, file), parse(t, strings.Replace(file, "x: {", "x: {adopt: true, ", 1))
		k := adoptKernel(own)
		if p, err := diff.Compute(own, k.st); err != nil || !p.Empty() {
			t.Fatalf("%s: the kernel as declared is not in sync: %v\n%s", kind, err, p)
		}
		ms := attributeMutations(k.st.Links["x"])
		for _, other := range model.Kinds {
			if other != kind && other != model.KindDevice {
				ms = append(ms, mutation{"kind " + other, func(l *model.Link) {
					*l = model.Link{Name: l.Name, Kind: other, MTU: l.MTU, Up: l.Up, Owned: true, Index: l.Index}
				}})
			}
		}
		for _, m := range ms {
			t.Run(kind+"/"+m.what, func(t *testing.T) {
				k := adoptKernel(own)
				x := cloneLink(k.st.Links["x"])
				m.do(x)
				x.Lower = x.Parent()
				k.st.Links["x"] = x
				po, erro := diff.Compute(own, k.st)
				pa, erra := diff.Compute(adopt, k.st)
				if !recreates(po, "x") {
					// Changed in place, or not at all: adopted, the same.
					if (erro == nil) != (erra == nil) {
						t.Errorf("owned: %v; adopted: %v", erro, erra)
					}
					return
				}
				recreating[kind]++
				if recreates(pa, "x") {
					t.Errorf("adopted x is recreated:\n%s", pa)
				}
				var cs diff.Conflicts
				if !errors.As(erra, &cs) || !strings.Contains(erra.Error(), "link x ") || !strings.Contains(erra.Error(), "adopt") {
					t.Errorf("adopted x: no conflict over it: %v\nplan:\n%s", erra, pa)
				}
			})
		}
	}
	// The generator reaches what the diff recreates: each kind's change
	// of kind, and for these kinds an attribute of their own too.
	for _, kind := range model.Kinds {
		least := len(model.Kinds) - 2
		switch kind {
		case model.KindDevice:
			continue
		case model.KindVeth, model.KindVXLAN, model.KindIPVlan, model.KindIPIP, model.KindIP6Tnl, model.KindVLAN, model.KindMACVlan, model.KindVRF, model.KindBond:
			least++
		}
		if recreating[kind] < least {
			t.Errorf("kind %s: %d changes recreate it, want %d at least", kind, recreating[kind], least)
		}
	}
}

// TestAdoptedChildIsNeverRecreated: a link recreated (or deleted) takes the
// links on it with it, and the links on those: when one of them is adopted,
// that is a conflict, and nothing is recreated.
func TestAdoptedChildIsNeverRecreated(t *testing.T) {
	eth := model.Link{Name: "eth0", Kind: model.KindDevice, Up: true}
	k := func() *kernel {
		return newKernel().link(eth).
			link(model.Link{Name: "p0", Kind: model.KindVLAN, Owned: true, Up: true, Lower: "eth0", VLAN: &model.VLAN{Parent: "eth0", ID: 10, Protocol: model.VLAN8021Q}}).
			link(model.Link{Name: "v0", Kind: model.KindVLAN, Owned: true, Up: true, Lower: "p0", VLAN: &model.VLAN{Parent: "p0", ID: 20, Protocol: model.VLAN8021Q}}).
			link(model.Link{Name: "mv0", Kind: model.KindMACVlan, Owned: true, Up: true, Lower: "v0", MACVlan: &model.MACVlan{Parent: "v0", Mode: model.MACVlanBridge}})
	}
	run(t, []tc{{
		name: "an adopted link on a recreated one",
		file: "links:\n  eth0: {kind: device}\n  p0: {kind: vlan, vlan: {parent: eth0, id: 11}}\n  v0: {kind: vlan, adopt: true, vlan: {parent: p0, id: 20}}\n" +
			"  mv0: {kind: macvlan, macvlan: {parent: v0}}\n",
		kernel: k(),
		conflict: `
link p0 cannot be deleted or recreated: the kernel would delete [v0] with it, which the file adopts, and an adopted link is never recreated
link v0 is left out: it needs link p0
link mv0 is left out: it needs link v0
`,
	}, {
		name: "an adopted link on a link on a recreated one",
		file: "links:\n  eth0: {kind: device}\n  p0: {kind: vlan, vlan: {parent: eth0, id: 11}}\n  v0: {kind: vlan, vlan: {parent: p0, id: 20}}\n" +
			"  mv0: {kind: macvlan, adopt: true, macvlan: {parent: v0}}\n",
		kernel: k(),
		conflict: `
link p0 cannot be deleted or recreated: the kernel would delete [mv0] with it, which the file adopts, and an adopted link is never recreated
link v0 is left out: it needs link p0
link mv0 is left out: it needs link v0
`,
	}, {
		name:   "not adopted: all three recreated",
		file:   "links:\n  eth0: {kind: device}\n  p0: {kind: vlan, vlan: {parent: eth0, id: 11}}\n  v0: {kind: vlan, vlan: {parent: p0, id: 20}}\n  mv0: {kind: macvlan, macvlan: {parent: v0}}\n",
		kernel: k(),
		plan: `
- link p0 (vlan, recreated below) [link recreated]
- link v0 (vlan, recreated below) [link recreated]
+ link p0 (vlan parent eth0 id 11 protocol 802.1q): vlan id 10 -> 11 [link recreated]
+ link v0 (vlan parent p0 id 20 protocol 802.1q): the kernel deletes it with p0, which is recreated [link recreated]
± link mv0 (macvlan parent v0 mode bridge): the kernel deletes it with v0, which is recreated [link recreated]
`,
	}})
}
