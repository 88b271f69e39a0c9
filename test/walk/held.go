package walk

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// The service's pass under settings.max-disruption. apply by hand reads no
// limit from the file (docs/plans.md): the service does, holding each
// change above it with what needs it until a person applies. So where the
// step's file sets one, the runner first makes the service's pass (the
// engine with the file's limit, as the daemon builds it) and checks:
//
//   - every op the pass applies is at or below the limit;
//   - what it holds is as the kernel had it: each held link keeps its
//     ifindex, kind, peer or parent, MTU, master, alias and state, read
//     with ip -d -j link, and each held table its handle (nft -a);
//   - a second pass plans nothing but what the first held, and writes
//     nothing (the pass converges around what it holds).
//
// The apply by hand that follows applies what was held, and the step's
// checks hold it to the file as on any step.

// heldPass makes the service's pass over file and confDir with c's limit;
// before is the kernel as the step found it.
func (r *runner) heldPass(c *Config, file, confDir string, before *Kernel) error {
	level, err := diff.ParseDisruption(c.MaxDisruption)
	if err != nil {
		return err
	}
	cfg, err := desired.Load(file, confDir)
	if err != nil {
		return err
	}
	if cfg.State.MaxDisruption != c.MaxDisruption {
		return fmt.Errorf("the file's settings.max-disruption loads as %q, want %q", cfg.State.MaxDisruption, c.MaxDisruption)
	}
	pass := func() (*diff.Plan, uint64, error) {
		k, err := kernel.Open("/run/netns/" + r.ns)
		if err != nil {
			return nil, 0, err
		}
		defer k.Close()
		l, err := nettest.OpenLedger(filepath.Join(r.state, "netns", r.ns, "ledger.json"))
		if err != nil {
			return nil, 0, err
		}
		eng := &engine.Engine{Kernel: k, Ledger: l, IPAMDir: filepath.Join(r.state, "netns", r.ns), MaxDisruption: &level}
		ctx := context.Background()
		plan, _, err := eng.PlanDesired(ctx, cfg.State, false)
		if plan == nil {
			return nil, 0, fmt.Errorf("plan: %w", err)
		}
		for _, op := range plan.Ops {
			if op.Disruption > level {
				return nil, 0, fmt.Errorf("the pass under max-disruption %s plans %s %s %s, which is %s", level, op.Action, op.Kind, op.ID, op.Disruption)
			}
		}
		res, aerr := eng.Apply(ctx, plan)
		return plan, k.Writes(), errors.Join(err, aerr, res.Err())
	}
	plan, _, err := pass()
	if err != nil {
		return fmt.Errorf("the service's pass: %w", err)
	}
	after, err := ReadKernel(r.ns, true)
	if err != nil {
		return err
	}
	var bad []string
	for _, op := range plan.Held {
		switch op.Kind {
		case diff.KindLink:
			b, a := before.Links[op.ID], after.Links[op.ID]
			if b == nil {
				if a != nil {
					bad = append(bad, fmt.Sprintf("link %s: held (%s %s), yet made", op.ID, op.Action, op.Disruption))
				}
				continue
			}
			if bs, as := heldLinkText(b), heldLinkText(a); bs != as {
				bad = append(bad, fmt.Sprintf("link %s: held (%s %s), yet it changed: %s -> %s", op.ID, op.Action, op.Disruption, bs, as))
			}
		case diff.KindAddress:
			if op.Address == nil {
				continue
			}
			if bs, as := heldAddrText(before, op.Address), heldAddrText(after, op.Address); bs != as {
				bad = append(bad, fmt.Sprintf("address %s: held (%s %s), yet it changed: %s -> %s", op.ID, op.Action, op.Disruption, bs, as))
			}
		case diff.KindNftTable:
			bh, ah := tableHandle(before.NftText, op.ID), tableHandle(after.NftText, op.ID)
			if bh != ah {
				bad = append(bad, fmt.Sprintf("nftables %s: held (%s %s), yet its handle went %s -> %s", op.ID, op.Action, op.Disruption, bh, ah))
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("the service's pass under max-disruption %s:\n  %s\nit planned:\n%s", level, strings.Join(bad, "\n  "), planString(plan))
	}
	again, w, err := pass()
	if err != nil {
		return fmt.Errorf("the service's second pass: %w", err)
	}
	if len(again.Ops) > 0 || w != 0 {
		return fmt.Errorf("the service's second pass under max-disruption %s made %d kernel writes; it planned:\n%s", level, w, planString(again))
	}
	return nil
}

// heldLinkText is what a held link must keep, as ip -d -j link shows it.
func heldLinkText(l *kLink) string {
	if l == nil {
		return "(gone)"
	}
	return fmt.Sprintf("ifindex %d %s link %q mtu %d master %q alias %q up %v", l.Index, l.kind(), l.Link, l.MTU, l.Master, l.Alias, l.up())
}

// heldAddrText is what a held address must keep, as ip -j addr shows the
// address of a's link with a's IP: its prefix length, scope, peer and
// noprefixroute; "(gone)" when the link has no such address.
func heldAddrText(k *Kernel, a *model.Address) string {
	l := k.Addrs[a.Link]
	if l == nil {
		return "(gone)"
	}
	for _, x := range l.Addrs {
		if ip, err := netip.ParseAddr(x.Local); err == nil && ip == a.Prefix.Addr() {
			return fmt.Sprintf("/%d scope %s peer %q noprefixroute %v", x.Prefixlen, x.Scope, x.Peer, x.NoPrefixRoute)
		}
	}
	return "(gone)"
}

// tableHandle is the handle nft -a lists for table id ("FAMILY NAME"),
// "" when it has none.
func tableHandle(nftText, id string) string {
	for _, line := range strings.Split(nftText, "\n") {
		if rest, ok := strings.CutPrefix(line, "table "+id+" "); ok {
			if i := strings.Index(rest, "# handle "); i >= 0 {
				return strings.Fields(rest[i+len("# handle "):])[0]
			}
		}
	}
	return ""
}

func planString(p *diff.Plan) string {
	var b bytes.Buffer
	p.Write(&b)
	return b.String()
}
