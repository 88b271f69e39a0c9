package diff

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// KindSysctl is a kernel parameter under net. (model.Sysctl).
const KindSysctl Kind = "sysctl"

// sysctls: a declared key whose value differs is written (Update), taking
// it over: the engine records the value it had in the ledger first. A
// per-link key of a link this plan creates or makes again is written after
// the link (Create), unless the link's first value, that of the "default"
// key, is the file's (a neigh key is always written: its template, lo's,
// only probably holds the first value; see model.SysctlLink). A key the
// ledger owns that the file no longer declares gets its recorded value back
// (Delete), except on a link this plan deletes. Keys never written by
// netreconcile are never touched.
//
// Global keys are written before per-link ones, and the master keys first
// of all: net.ipv4.ip_forward (one parameter with
// net.ipv4.conf.all.forwarding), net.ipv6.conf.all.forwarding,
// net.ipv6.conf.all.disable_ipv6 and a few more set that key of every
// link, so the file's other keys they set are written again after a master
// key is (forwardingMasters).
//
// The value a key is owed back is the one it would have had had
// netreconcile never written it, and a master key netreconcile writes, the
// file's value or its own given back, changes that: the key would have
// taken the master's value, as every key of the family the file does not
// name does. So the keys a master's write sets are recorded again with
// the master's value (Op.SysctlRebase), and one that leaves the file in
// the plan that writes its master is left at the master's value.
func (c *computer) sysctls() {
	start := len(c.plan.Ops)
	order := make([]*model.Sysctl, 0, len(c.d.Sysctls))
	for pass := 0; pass < 3; pass++ {
		for i := range c.d.Sysctls {
			w := &c.d.Sysctls[i]
			_, master := forwardingMasters[w.Key]
			if (pass == 0 && master) || (pass == 1 && !master && w.Link == "") || (pass == 2 && w.Link != "") {
				order = append(order, w)
			}
		}
	}
	// rewritten holds, by family, the master key this plan writes, the
	// file's or given back, and the value.
	rewritten := map[string]model.Sysctl{}
	for _, w := range order {
		planned := c.sysctl(w)
		fam := sysctlGroup(w.Key)
		if _, ok := forwardingMasters[w.Key]; ok && planned {
			rewritten[fam] = *w
			continue
		}
		m := rewritten[fam]
		v, sets := masterSets(m, w.Key)
		switch {
		case planned && sets:
			// Written after the master, which set it first.
			if op := &c.plan.Ops[len(c.plan.Ops)-1]; op.Action == Update {
				op.SysctlWas, op.SysctlRebase = v, true
			}
		case !planned && sets:
			c.add(Op{Action: Update, Kind: KindSysctl, ID: w.Key, Changes: []Change{{"value", m.Key + "'s", w.Value}},
				Reason: "written again: " + m.Key + " sets it", Sysctl: w, SysctlWas: v, SysctlRebase: true})
		}
	}
	// Restores, the master keys first too; a master key written back
	// sets the family's forwarding keys, and the file's are written again.
	var restores []Op
	for pass := 0; pass < 2; pass++ {
		for i := range c.a.Sysctls {
			h := &c.a.Sysctls[i]
			_, master := forwardingMasters[h.Key]
			if !h.Owned || master != (pass == 0) || model.FindSysctl(c.d.Sysctls, h.Key) != nil {
				continue
			}
			orig := c.sysctlBack(h)
			back := &model.Sysctl{Key: h.Key, Value: orig, Link: h.Link}
			op := Op{Action: Delete, Kind: KindSysctl, ID: h.Key, Sysctl: back, SysctlWas: h.Value,
				Changes: []Change{{"value", h.Value, orig}}, Reason: "back to the value found before netreconcile set it"}
			if h.Value == orig {
				// Nothing to write: the record is dropped.
				op.Changes, op.Reason = nil, "already at the value found before netreconcile set it"
			}
			fam := sysctlGroup(h.Key)
			if m := rewritten[fam]; op.Changes != nil {
				if _, sets := masterSets(m, h.Key); sets {
					// The master key, written in this plan, sets this
					// key: written back after it, the key would undo
					// what the master's value asks of every link (or
					// what giving it back does). The record is
					// dropped, the key left at the master's value.
					how := "writes"
					if model.FindSysctl(c.d.Sysctls, m.Key) == nil {
						how = "gives back"
					}
					op.Changes, op.Reason = nil, "left to "+m.Key+", which this plan "+how+" and which sets it"
					back.Value = h.Value // nothing written (runSysctl)
				}
			}
			if c.goesWithLink(h.Link, op) {
				// Gone with its link; the ledger forgets the key when
				// it no longer exists.
				continue
			}
			restores = append(restores, op)
			if master && op.Changes != nil && rewritten[fam].Key == "" {
				rewritten[fam] = *back
				for _, w := range order {
					// Also a key written above: the restore runs
					// after it.
					if v, sets := masterSets(*back, w.Key); sets {
						restores = append(restores, Op{Action: Update, Kind: KindSysctl, ID: w.Key, Changes: []Change{{"value", h.Key + "'s", w.Value}},
							Reason: "written again: " + h.Key + " sets it", Sysctl: w, SysctlWas: v, SysctlRebase: true})
					}
				}
			}
		}
	}
	for _, op := range restores {
		if masterSetsFamily(op.ID) == "ipv6 disable_ipv6" {
			// Before the addresses and routes, not after: IPv6 turned
			// back on is what lets the kernel take the file's IPv6
			// addresses (EACCES until then), and turned back off it
			// deletes them.
			c.add(op)
			continue
		}
		c.del(op)
	}
	c.defaultSpreads(start)
	c.mtuAfterIPv6On(start)
	c.ipv6Flushes()
	c.ipv6OnBeforeVXLANs(start)
	c.ipv6MTUAfterPins()
	// A file declares no secret (validation refuses it), but the ledger
	// may own one from before, given back here: its values are not shown.
	for _, ops := range [][]Op{c.plan.Ops[start:], c.deletes} {
		for i := range ops {
			if ops[i].Kind == KindSysctl && model.SysctlSecret(ops[i].ID) {
				ops[i].Changes = slices.Clone(ops[i].Changes)
				for j := range ops[i].Changes {
					ops[i].Changes[j].From, ops[i].Changes[j].To = model.SecretShown, "the one found before, not shown"
				}
			}
		}
	}
}

// ipv6OnBeforeVXLANs moves each write that turns IPv6 back on (a
// disable_ipv6 from 1 to 0, written or given back) that a vxlan over IPv6
// on a device needs before the create of that vxlan: the kernel refuses to
// make such a vxlan on a device whose IPv6 is disabled (EPERM,
// vxlan_config_validate), and the sysctls are written after the links.
// The device's disable_ipv6 is its own key, which
// net.ipv6.conf.all.disable_ipv6 sets too, on every link and on "default"
// (addrconf_disable_change), and which a device made by this plan takes
// from "default" when it is made: the device's own key moves before the
// vxlan's create (after the device's, which makes it), all's likewise, and
// default's, which reaches only a device made after it, before the
// device's create. The ops from index start are the sysctl stage's.
func (c *computer) ipv6OnBeforeVXLANs(start int) {
	for i := start; i < len(c.plan.Ops); i++ {
		op := c.plan.Ops[i]
		if op.Kind != KindSysctl || op.Sysctl == nil || op.Sysctl.Value != "0" || op.SysctlWas == "0" || op.Changes == nil {
			continue
		}
		dev, short, _, ok := model.SysctlLink(op.ID)
		if ok && (short != "ipv6.disable_ipv6" || c.a.Links[dev] == nil && !c.recreated[dev]) {
			continue
		}
		if !ok && op.ID != "net.ipv6.conf.all.disable_ipv6" && op.ID != "net.ipv6.conf.default.disable_ipv6" {
			continue
		}
		if ok && op.SysctlWas != "1" && !c.recreated[dev] {
			continue
		}
		made := func(o Op, name string) bool {
			return o.Kind == KindLink && o.Link != nil && o.ID == name && (o.Action == Create || o.Action == Replace)
		}
		j := slices.IndexFunc(c.plan.Ops[:start], func(o Op) bool {
			if o.Kind != KindLink || o.Link == nil || o.Link.VXLAN == nil || o.Action != Create && o.Action != Replace {
				return false
			}
			v := o.Link.VXLAN
			if v.Dev == "" || !v.Remote.Is6() && !v.Local.Is6() {
				return false
			}
			return !ok && op.ID == "net.ipv6.conf.all.disable_ipv6" || v.Dev == dev ||
				op.ID == "net.ipv6.conf.default.disable_ipv6" && c.recreated[v.Dev]
		})
		if j < 0 {
			continue
		}
		if op.ID == "net.ipv6.conf.default.disable_ipv6" {
			// Before the device's create: the device takes default's
			// value when it is made.
			dev := c.plan.Ops[j].Link.VXLAN.Dev
			if k := slices.IndexFunc(c.plan.Ops[:j], func(o Op) bool { return made(o, dev) }); k >= 0 {
				j = k
			}
		}
		c.plan.Ops = slices.Insert(slices.Delete(c.plan.Ops, i, i+1), j, op)
		start++
	}
}

// defaultSpreads follows each write of a "default" key that the kernel
// copies to the links (model.SysctlDefaultSpreads), in the plan from index
// start of its ops or among its deletes, with a write of that key of every
// link the plan does not write already: the kernel sets it on each link
// that never wrote it, and no dump tells which. A link's key the file
// declares is written again (its value is the file's); a link of the file
// (not a "device", nor adopted) that does not declare it gets default's
// new value, the one a link made under the file starts with, whatever the
// link's history; any other link, the file's devices, adopted links and
// links left out for a conflict included, keeps its value: written back,
// not taken over. A link whose
// key is already default's new value needs nothing, and neither does one
// the write cannot reach (a link that goes, or whose key the read did not
// cover).
func (c *computer) defaultSpreads(start int) {
	written := map[string]bool{}
	for _, ops := range [][]Op{c.plan.Ops[start:], c.deletes} {
		for _, op := range ops {
			if op.Kind == KindSysctl && op.Changes != nil {
				written[op.ID] = true
			}
		}
	}
	links := map[string]bool{}
	for n := range c.a.Links {
		links[n] = true
	}
	for n := range c.d.Links {
		links[n] = true
	}
	names := slices.Sorted(maps.Keys(links))
	follow := func(dflt *model.Sysctl, short string) []Op {
		was := model.FindSysctl(c.a.Sysctls, dflt.Key)
		var ops []Op
		for _, n := range names {
			key, ok := model.PerLinkSysctl(n, short)
			if !ok || written[key] || c.linkGoes[n] {
				continue
			}
			dl := c.d.Links[n]
			made := c.a.Links[n] == nil || c.recreated[n]
			if made && (dl == nil || c.blocked[n]) {
				continue
			}
			cur := ""
			if made {
				if was == nil {
					continue
				}
				cur = was.Value // the new link copied default's
			} else if h := model.FindSysctl(c.a.Sysctls, key); h != nil {
				cur = h.Value
			} else {
				continue
			}
			w := model.FindSysctl(c.d.Sysctls, key)
			file := dl != nil && dl.Kind != model.KindDevice && !dl.Adopt && !c.blocked[n]
			switch {
			case w != nil && !c.blocked[n]:
				if cur == dflt.Value {
					continue
				}
				op := Op{Action: Update, Kind: KindSysctl, ID: key, Changes: []Change{{"value", dflt.Key + "'s", w.Value}},
					Reason: "written again: " + dflt.Key + " sets it where the link never wrote it", Sysctl: w, SysctlWas: cur}
				if made {
					_, _, tmpl, _ := model.SysctlLink(key)
					op.Action, op.SysctlWas = Create, c.sysctlNatural(key, tmpl)
				}
				ops = append(ops, op)
			case file:
				if cur == dflt.Value && !made {
					continue
				}
				ops = append(ops, Op{Action: Update, Kind: KindSysctl, ID: key, Changes: []Change{{"value", cur, dflt.Value}},
					Reason: "follows " + dflt.Key + ", as a link made under the file starts with it", Sysctl: &model.Sysctl{Key: key, Value: dflt.Value, Link: n},
					SysctlWas: cur, SysctlUnowned: true})
			default:
				if cur == dflt.Value {
					continue
				}
				ops = append(ops, Op{Action: Update, Kind: KindSysctl, ID: key, Changes: []Change{{"value", dflt.Key + "'s", cur}},
					Reason: "kept: " + n + " is not the file's, and " + dflt.Key + " sets it where the link never wrote it", Sysctl: &model.Sysctl{Key: key, Value: cur, Link: n},
					SysctlWas: cur, SysctlUnowned: true})
			}
			written[key] = true
		}
		return ops
	}
	var after []Op
	for _, op := range c.plan.Ops[start:] {
		if short, ok := model.SysctlDefaultSpreads(op.ID); ok && op.Kind == KindSysctl && op.Changes != nil && op.Sysctl != nil {
			after = append(after, follow(op.Sysctl, short)...)
		}
	}
	for _, op := range after {
		c.add(op)
	}
	after = after[:0]
	for _, op := range c.deletes {
		if short, ok := model.SysctlDefaultSpreads(op.ID); ok && op.Kind == KindSysctl && op.Changes != nil && op.Sysctl != nil {
			after = append(after, follow(op.Sysctl, short)...)
		}
	}
	for _, op := range after {
		c.del(op)
	}
}

// mtuAfterIPv6On writes a declared net.ipv6.conf.LINK.mtu after the last
// sysctl write of the plan (from index start of its ops) that turns the
// link's IPv6 back on: disable_ipv6 from 1 to 0, by the link's own key or
// by net.ipv6.conf.all.disable_ipv6, which sets every link's
// (addrconf_disable_change). The kernel then brings the link's IPv6 up
// again (dev_disable_change: NETDEV_UP) and, on a link that is up with
// carrier, sets that key to the link's MTU: a write of it before is lost,
// and a key the kernel held at the file's value needs writing again. A
// write planned before moves after; none is needed where the link's MTU
// is the file's value.
func (c *computer) mtuAfterIPv6On(start int) {
	disabled := map[string]bool{} // as the ops so far leave each link
	isDisabled := func(link string) bool {
		if d, ok := disabled[link]; ok {
			return d
		}
		key, _ := model.PerLinkSysctl(link, "ipv6.disable_ipv6")
		h := model.FindSysctl(c.a.Sysctls, key)
		return h != nil && h.Value != "0"
	}
	on := map[string]int{} // link: the index of the last op turning its IPv6 on
	for i := start; i < len(c.plan.Ops); i++ {
		op := &c.plan.Ops[i]
		if op.Kind != KindSysctl || op.Sysctl == nil || op.Changes == nil {
			continue
		}
		links := []string{}
		if op.ID == "net.ipv6.conf.all.disable_ipv6" {
			links = c.a.SortedLinkNames()
		} else if link, short, _, ok := model.SysctlLink(op.ID); ok && short == "ipv6.disable_ipv6" {
			links = append(links, link)
		}
		off := op.Sysctl.Value != "0"
		for _, link := range links {
			if !off && isDisabled(link) {
				on[link] = i
			}
			disabled[link] = off
		}
	}
	drop := map[int]bool{}
	var again []Op
	for _, link := range slices.Sorted(maps.Keys(on)) {
		key, _ := model.PerLinkSysctl(link, "ipv6.mtu")
		w := model.FindSysctl(c.d.Sysctls, key)
		dl, al := c.d.Links[link], c.a.Links[link]
		if w == nil || dl == nil || al == nil || c.recreated[link] || c.blocked[link] || c.ipv6Crossing(link) != 0 {
			continue
		}
		to := al.MTU
		if dl.MTU != 0 && !c.mtuWaited[link] {
			// A link whose MTU write waits (mtuWritesWait) keeps the
			// kernel's.
			to = dl.MTU
		}
		if to < ipv6MinMTU {
			continue
		}
		at := slices.IndexFunc(c.plan.Ops[start:], func(op Op) bool { return op.Kind == KindSysctl && op.ID == key })
		if at >= 0 && start+at > on[link] {
			continue
		}
		if at >= 0 {
			drop[start+at] = true
		}
		if strconv.Itoa(to) == w.Value {
			continue
		}
		was := c.sysctlBefore(w)
		again = append(again, Op{Action: Update, Kind: KindSysctl, ID: key, Changes: []Change{{"value", was + " (set to " + strconv.Itoa(to) + ", " + link + "'s MTU)", w.Value}},
			Reason: "written again: IPv6 turned back on on " + link + " sets it", Sysctl: w, SysctlWas: strconv.Itoa(to), SysctlRebase: true})
	}
	if len(drop) > 0 {
		kept := c.plan.Ops[:0]
		for i, op := range c.plan.Ops {
			if !drop[i] {
				kept = append(kept, op)
			}
		}
		c.plan.Ops = kept
	}
	c.plan.Ops = append(c.plan.Ops, again...)
}

// ipv6Returns reports whether key is an IPv6 key of an existing link that
// this plan takes from below IPv6's minimum MTU to it or above: the kernel
// gives such a link its IPv6 settings afresh, from "default", as to a new
// link (the link had none: below 1280 the kernel takes them away).
func (c *computer) ipv6Returns(key string) bool {
	link, short, _, ok := model.SysctlLink(key)
	if !ok || !strings.HasPrefix(short, "ipv6.") {
		return false
	}
	return !c.recreated[link] && !c.blocked[link] && c.ipv6Crossing(link) > 0
}

// ipv6Flushes marks the links whose IPv6 addresses and routes the plan's
// sysctl writes take (v6Flushed): disable_ipv6 turned on deletes them
// (addrconf_ifdown), on one link or, by net.ipv6.conf.all.disable_ipv6,
// on every link, those whose own key the file then sets back to 0
// included.
func (c *computer) ipv6Flushes() {
	// Below IPv6's minimum MTU the kernel takes IPv6 off the link
	// (addrconf_notify, NETDEV_CHANGEMTU), addresses and routes with it.
	for n := range c.d.Links {
		if !c.recreated[n] && !c.blocked[n] && c.ipv6Crossing(n) < 0 {
			c.v6Flushed[n] = true
		}
	}
	for i := range c.plan.Ops {
		op := &c.plan.Ops[i]
		if op.Kind != KindSysctl || op.Sysctl == nil || op.Sysctl.Value == "0" {
			continue
		}
		switch link, short, _, _ := model.SysctlLink(op.Sysctl.Key); {
		case op.Sysctl.Key == "net.ipv6.conf.all.disable_ipv6":
			for n := range c.a.Links {
				c.v6Flushed[n] = true
			}
		case short == "ipv6.disable_ipv6":
			c.v6Flushed[link] = true
		}
	}
}

// sysctlBefore is the value a declared key has before this plan: the
// kernel's, or for a link this plan creates, the link's first value.
func (c *computer) sysctlBefore(w *model.Sysctl) string {
	if w.Link == "" || (c.a.Links[w.Link] != nil && !c.recreated[w.Link] && !c.ipv6Returns(w.Key)) {
		if h := model.FindSysctl(c.a.Sysctls, w.Key); h != nil {
			return h.Value
		}
		return ""
	}
	if isIPv6MTU(w.Key) {
		// A new link's IPv6 MTU is its MTU (ipv6_add_dev), not
		// default's: unknown here unless the file gives the MTU.
		if l := c.d.Links[w.Link]; l != nil && l.MTU != 0 {
			return strconv.Itoa(l.MTU)
		}
		return ""
	}
	_, _, tmpl, _ := model.SysctlLink(w.Key)
	if t := model.FindSysctl(c.a.Sysctls, tmpl); t != nil {
		return t.Value
	}
	return ""
}

// ipv6MTUAfterPins lists the declared net.ipv6.conf.LINK.mtu of the links
// whose MTU apply may set after the ops (Plan.PinMTU, Plan.FollowMTU): the
// kernel sets the key to the link's MTU at each change of it, the port
// that pulled a bridge down and the pin that sets it back alike, and
// neither is known before the ops ran. So apply writes the key after the
// pins (Plan.IPv6MTU), and gives it back after them when the file drops
// it: the value given back is the link's MTU after the plan, which the
// kernel refuses below the pinned one.
func (c *computer) ipv6MTUAfterPins() {
	add := func(link string) {
		key, ok := model.PerLinkSysctl(link, "ipv6.mtu")
		if !ok {
			return
		}
		if c.plan.IPv6MTU == nil {
			c.plan.IPv6MTU = map[string]IPv6MTUAfterPins{}
		}
		// Sysctl is nil where the file does not declare the key: a
		// give-back of it waits for the pins too.
		w := model.FindSysctl(c.d.Sysctls, key)
		h := model.FindSysctl(c.a.Sysctls, key)
		c.plan.IPv6MTU[link] = IPv6MTUAfterPins{Sysctl: w, Kept: w != nil && h != nil && h.Value == w.Value}
	}
	for _, l := range c.plan.PinMTU {
		add(l.Name)
	}
	for _, f := range c.plan.FollowMTU {
		add(f.Link)
	}
}

// isIPv6MTU reports whether key is a link's net.ipv6.conf.LINK.mtu, which
// the kernel sets to the link's MTU when the link gets its IPv6 settings
// and whenever its MTU changes.
func isIPv6MTU(key string) bool {
	_, short, _, ok := model.SysctlLink(key)
	return ok && short == "ipv6.mtu"
}

// ipv6MTUReset reports whether this plan makes the kernel set link's
// net.ipv6.conf.LINK.mtu to the link's MTU, and to what: the kernel does
// when the MTU changes (NETDEV_CHANGEMTU) and when the link becomes ready:
// it comes up with carrier (NETDEV_UP), or, up, gets carrier
// (NETDEV_CHANGE). link is one the plan neither creates nor recreates; why
// says which write does it.
func (c *computer) ipv6MTUReset(link string) (mtu, why string, ok bool) {
	w, h := c.d.Links[link], c.a.Links[link]
	if w == nil || h == nil || c.recreated[link] || c.blocked[link] {
		return "", "", false
	}
	// The MTU the kernel moves the link to through a change of it: the
	// plan's write (the file's MTU, or the lower device's that a link
	// without one follows: uppersFollow), or a bond's that its port takes;
	// a write that waits (mtuWritesWait) is no write. An ipvlan takes
	// its parent's MTU without the change (ipvlan_adjust_mtu): the key
	// stays.
	to := h.MTU
	if m, ok := c.plannedMTU(link); ok {
		to = m
	} else if b := c.d.Links[w.Master]; b != nil && b.Kind == model.KindBond {
		if m, ok := c.plannedMTU(w.Master); ok {
			to = m
		}
	}
	switch {
	case to != h.MTU:
		why = "the MTU change of " + link
	case c.cycledUp[link] || (w.Up && !h.Up && (w.StateSet || w.Kind != model.KindDevice)):
		why = link + " coming up"
	case w.Up && h.Up && h.NoCarrier && c.carrierFrom(link) != "":
		why = link + " getting its carrier from " + c.carrierFrom(link)
	default:
		return "", "", false
	}
	return strconv.Itoa(to), why, true
}

// plannedMTU is the MTU the plan's update of link writes, if it writes one.
func (c *computer) plannedMTU(link string) (int, bool) {
	for i := range c.plan.Ops {
		op := &c.plan.Ops[i]
		if op.Kind == KindLink && op.Action == Update && op.ID == link && op.LinkFields.MTU && op.Link != nil {
			return op.Link.MTU, true
		}
	}
	return 0, false
}

// carrierFrom says what gives link, up without carrier, its carrier in
// this plan, "" for nothing: its veth peer in this namespace coming up, or
// a port of a bridge that has carrier then. A link that was ready before
// it lost its carrier stays ready and keeps the key when the carrier
// comes back, but no dump says which links are (IF_READY): the key is
// then written again for nothing.
func (c *computer) carrierFrom(link string) string {
	w := c.d.Links[link]
	switch {
	case w.Veth != nil && w.Veth.PeerNetNS == "" && w.Veth.Peer != "":
		if p := w.Veth.Peer; c.upAfter(p) && (c.a.Links[p] == nil || !c.a.Links[p].Up) {
			return "its peer " + p + " coming up"
		}
	case w.Kind == model.KindBridge:
		for _, n := range slices.Sorted(maps.Keys(c.d.Links)) {
			wp, hp := c.d.Links[n], c.a.Links[n]
			if wp.Master != link || c.blocked[n] || !wp.Up {
				continue
			}
			if hp != nil && hp.Master == link && hp.Up && !c.recreated[n] {
				// A port already, up: it brings the carrier only if it
				// gets its own now.
				if hp.NoCarrier && c.carrierFrom(n) != "" {
					return "its port " + n
				}
				continue
			}
			if c.carrierAfter(n) {
				return "its port " + n
			}
		}
	}
	return ""
}

// carrierAfter reports whether link, declared up, has carrier once this
// plan ran, as far as the plan tells: a veth whose peer in this namespace
// is up then. Any other link (a veth whose peer is elsewhere too) is taken
// to have it: a write again for nothing costs less than a key the kernel
// sets back after the apply.
func (c *computer) carrierAfter(link string) bool {
	w := c.d.Links[link]
	if w.Veth == nil || w.Veth.PeerNetNS != "" || w.Veth.Peer == "" {
		return true
	}
	return c.upAfter(w.Veth.Peer)
}

// sysctlNatural is the value a new link's key is recorded to have had
// before netreconcile set it, given back when the file drops the key: the
// value a link made under this file would start with, netreconcile's own
// doing on the link aside. A conf key's "default" is what a link copies for
// certain: the file's value when it declares it, else the value it goes
// back to (its recorded one when netreconcile owns it, in this plan), else
// its own. A neigh key's template is lo's, which a new link only probably
// copies: lo's value from before netreconcile set it, when it did.
func (c *computer) sysctlNatural(key, tmpl string) string {
	if model.SysctlExactTemplate(key) {
		if d := model.FindSysctl(c.d.Sysctls, tmpl); d != nil {
			return d.Value
		}
	}
	t := model.FindSysctl(c.a.Sysctls, tmpl)
	switch {
	case t == nil:
		return ""
	case t.Owned:
		return t.Original
	}
	return t.Value
}

// sysctlBack is the value an owned key the file no longer declares goes
// back to: the one recorded before netreconcile first wrote it, except on a
// link netreconcile made (marked, not adopted by the file), where it is
// what a link made under this file would start with (sysctlNatural). The
// record, taken when the link was made, is stale when the template changed
// since: the file declared net.ipv4.conf.default.X with the link, or drops
// it with the link's key, or a master key netreconcile wrote or gave back
// set it. A link's IPv6 MTU is the kernel's to move (ipv6MTUBack).
func (c *computer) sysctlBack(h *model.Sysctl) string {
	if h.Link == "" {
		return h.Original
	}
	l := c.a.Links[h.Link]
	made := l != nil && l.Owned
	if d := c.d.Links[h.Link]; d != nil && d.Adopt {
		made = false
	}
	if isIPv6MTU(h.Key) {
		return c.ipv6MTUBack(h, made)
	}
	if !made {
		return h.Original
	}
	_, _, tmpl, ok := model.SysctlLink(h.Key)
	if !ok {
		return h.Original
	}
	if v := c.sysctlNatural(h.Key, tmpl); v != "" {
		return v
	}
	return h.Original
}

// ipv6MTUBack is the value a link's net.ipv6.conf.LINK.mtu that the file
// no longer declares goes back to. The kernel sets it to the link's MTU
// when the link gets its IPv6 settings (a new link starts there, not at
// default's), when the MTU changes and when the link becomes ready, so
// had netreconcile never written it, the key would hold the link's MTU on
// a link netreconcile made, and on any link this plan sets it on
// (ipv6MTUReset). On another link, the recorded value, at most the MTU:
// the kernel refuses more, and set the key to the MTU when the MTU went
// below it.
func (c *computer) ipv6MTUBack(h *model.Sysctl, made bool) string {
	l := c.a.Links[h.Link]
	if l == nil {
		return h.Original
	}
	mtu, _, _ := c.mtuHeld(h.Link, nil)
	if mtu == 0 {
		mtu = l.MTU
	}
	if mtu < ipv6MinMTU {
		// The key goes with the link's IPv6 (runSysctl: nothing left
		// to give back).
		return h.Original
	}
	_, _, reset := c.ipv6MTUReset(h.Link)
	if o, err := strconv.Atoi(h.Original); made || reset || err != nil || o > mtu {
		return strconv.Itoa(mtu)
	}
	return h.Original
}

// forwardingMasters are the keys whose write sets one key of every link of
// their family, "default"'s and each link's (devinet_sysctl_forward,
// addrconf_fixup_forwarding, addrconf_disable_change and the like; measured
// on 6.18: the other "all" keys set no link's): written first, and the
// file's keys they set are written again after them. The value is the
// group of keys a master sets: its family and the conf key's name.
var forwardingMasters = map[string]string{
	"net.ipv4.ip_forward":                           "ipv4 forwarding",
	"net.ipv4.conf.all.forwarding":                  "ipv4 forwarding",
	"net.ipv6.conf.all.forwarding":                  "ipv6 forwarding",
	"net.ipv6.conf.all.disable_ipv6":                "ipv6 disable_ipv6",
	"net.ipv6.conf.all.addr_gen_mode":               "ipv6 addr_gen_mode",
	"net.ipv6.conf.all.ignore_routes_with_linkdown": "ipv6 ignore_routes_with_linkdown",
	"net.ipv6.conf.all.force_forwarding":            "ipv6 force_forwarding",
}

// masterSets reports whether a write of master (a forwardingMasters key
// and the value written; Key "" for none) sets key, and to what: the keys
// of its group (masterSetsFamily), of every link and of "default", but
// for default's force_forwarding, which all's leaves (measured on 6.18),
// and net.ipv4.conf.all.accept_redirects, which the IPv4 forwarding keys
// set to the opposite (inet_forward_change).
func masterSets(master model.Sysctl, key string) (string, bool) {
	g, ok := forwardingMasters[master.Key]
	if !ok || key == master.Key || masterSetsFamily(key) != g || key == "net.ipv6.conf.default.force_forwarding" {
		return "", false
	}
	if key == "net.ipv4.conf.all.accept_redirects" {
		if master.Value == "0" {
			return "1", true
		}
		return "0", true
	}
	return master.Value, true
}

// masterSetsFamily is the group (forwardingMasters) whose master keys set
// key when they are written: a conf key of that name, of any link,
// "default" or "all", and for IPv4 forwarding
// net.ipv4.conf.all.accept_redirects too, which the kernel sets to the
// opposite of forwarding (inet_forward_change); "" for any other key. A
// declared such key is written again after its master.
func masterSetsFamily(key string) string {
	if key == "net.ipv4.conf.all.accept_redirects" {
		return "ipv4 forwarding"
	}
	return forwardingFamily(key)
}

// sysctlGroup is the group (forwardingMasters) of a master key, or of the
// keys a master sets (masterSetsFamily); "" for any other key.
func sysctlGroup(key string) string {
	if g, ok := forwardingMasters[key]; ok {
		return g
	}
	return masterSetsFamily(key)
}

// forwardingFamily is the group of a conf key that a master key writes
// (net.ipv4.conf.X.forwarding, net.ipv6.conf.X.disable_ipv6…), "" for any
// other key.
func forwardingFamily(key string) string {
	p := strings.Split(key, ".")
	if len(p) != 5 || p[0] != "net" || p[2] != "conf" {
		return ""
	}
	g := p[1] + " " + p[4]
	for _, mg := range forwardingMasters {
		if mg == g {
			return g
		}
	}
	return ""
}

// sysctl plans the write of one declared key, if it needs one.
func (c *computer) sysctl(w *model.Sysctl) bool {
	if w.Link != "" && (c.a.Links[w.Link] == nil || c.recreated[w.Link] || c.ipv6Returns(w.Key)) {
		_, _, tmpl, _ := model.SysctlLink(w.Key)
		was := c.sysctlBefore(w)
		from := tmpl
		if isIPv6MTU(w.Key) {
			from = "its MTU"
		}
		if was == w.Value && (model.SysctlExactTemplate(w.Key) || isIPv6MTU(w.Key)) {
			return false
		}
		natural := c.sysctlNatural(w.Key, tmpl)
		if m, _, _ := c.mtuHeld(w.Link, nil); isIPv6MTU(w.Key) && m >= ipv6MinMTU {
			// The link's IPv6 starts at its MTU (ipv6MTUBack).
			natural = strconv.Itoa(m)
		}
		c.add(Op{Action: Create, Kind: KindSysctl, ID: w.Key, Changes: []Change{{"value", was, w.Value}},
			Reason: "link " + w.Link + " is new: it starts with " + from, Sysctl: w, SysctlWas: natural})
		return true
	}
	h := model.FindSysctl(c.a.Sysctls, w.Key)
	if h == nil {
		// Missing: checkSysctls or ipv6Kept refuses the plan before it is made.
		return false
	}
	if isIPv6MTU(w.Key) {
		// (Asked of this key only: ipv6MTUReset looks through the plan's ops.)
		if to, why, ok := c.ipv6MTUReset(w.Link); ok {
			// The kernel sets the key to the link's MTU (addrconf_notify)
			// when the link's write runs, before this.
			if to == w.Value {
				return false
			}
			// Owed the MTU back: the kernel set the key to it (ipv6MTUBack).
			c.add(Op{Action: Update, Kind: KindSysctl, ID: w.Key, Changes: []Change{{"value", h.Value + " (set to " + to + ", " + w.Link + "'s MTU)", w.Value}},
				Reason: "written again: " + why + " sets it", Sysctl: w, SysctlWas: to, SysctlRebase: true, Carrier: c.a.Links[w.Link].NoCarrier})
			return true
		}
	}
	if h.Value == w.Value {
		return false
	}
	c.add(Op{Action: Update, Kind: KindSysctl, ID: w.Key, Changes: []Change{{"value", h.Value, w.Value}}, Sysctl: w, SysctlWas: h.Value})
	return true
}

// promoteBack writes a declared promote_secondaries again after the
// address ops that turn it on (Op.Promote: apply sets it to 1 before it
// deletes an IPv4 address of a link, so that the other addresses of the
// subnet stay): the file's value is the one the link keeps.
func (c *computer) promoteBack() {
	done := map[string]bool{}
	for _, ops := range [][]Op{c.plan.Ops, c.deletes} {
		for i := range ops {
			op := &ops[i]
			if !op.Promote || op.Address == nil || done[op.Address.Link] {
				continue
			}
			link := op.Address.Link
			done[link] = true
			key, _ := model.PerLinkSysctl(link, "ipv4.promote_secondaries")
			w := model.FindSysctl(c.d.Sysctls, key)
			if w == nil || w.Value == "1" {
				continue
			}
			was := "1"
			if h := model.FindSysctl(c.a.Sysctls, key); h != nil {
				was = h.Value
			}
			c.del(Op{Action: Update, Kind: KindSysctl, ID: key, Changes: []Change{{"value", "1", w.Value}},
				Reason: "written again: deleting an address of " + link + " turns it on", Sysctl: w, SysctlWas: was})
		}
	}
}

// checkSysctls refuses a plan whose file declares a key the kernel of the
// target namespace does not have (validation is offline: the file alone
// cannot say). It runs once the link stage knows which links the plan
// makes, recreates and leaves out. A per-link key of a link the plan
// creates or recreates is checked against the "default" key the link will
// take it from, and so is an IPv6 key of a link whose MTU the plan raises
// to IPv6's minimum or above from below (the kernel has none of its IPv6
// keys until then); a link left out for a conflict or held keeps its keys
// out of the plan with it, and only the template is checked. An IPv6 key
// of a link the plan keeps below IPv6's minimum is ipv6Kept's to refuse,
// with the reason. actual is a read that covered desired's keys
// (actual.SysctlKeys). All such keys are reported; nil when there are none.
func (c *computer) checkSysctls() error {
	var errs []error
	for i := range c.d.Sysctls {
		w := &c.d.Sysctls[i]
		if model.FindSysctl(c.a.Sysctls, w.Key) != nil {
			continue
		}
		at := ""
		if w.Origin != "" {
			at = " (declared at " + w.Origin + ")"
		}
		_, short, tmpl, _ := model.SysctlLink(w.Key)
		h := c.a.Links[w.Link]
		v6 := strings.HasPrefix(short, "ipv6.")
		if w.Link != "" && (h == nil || c.recreated[w.Link] || c.blocked[w.Link] || v6 && (c.ipv6Returns(w.Key) || h.MTU < ipv6MinMTU)) {
			if model.FindSysctl(c.a.Sysctls, tmpl) == nil {
				errs = append(errs, fmt.Errorf("sysctl %s%s: the kernel in this namespace has no such key for links (/proc/sys/%s does not exist)", w.Key, at, model.SysctlPath(tmpl)))
			}
			continue
		}
		errs = append(errs, fmt.Errorf("sysctl %s%s: the kernel in this namespace has no such key (/proc/sys/%s does not exist)", w.Key, at, model.SysctlPath(w.Key)))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%d unknown sysctl key(s), nothing was changed: %w", len(errs), errors.Join(errs...))
}
