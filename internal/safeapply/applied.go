package safeapply

import (
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// AppliedConfigs returns the configurations netreconcile last applied in
// dir's namespace, as recorded in transaction.json: the confirmed one (a
// plain apply or a daemon pass that converged records it) and a pending
// transaction's applied and restore ones. Those that no longer parse (a key
// file gone) and an unreadable record give nothing: this is
// engine.Engine.Applied, which forgives only what a configuration provably
// declared, so less is the safe side.
func AppliedConfigs(dir *statedir.Dir) []*model.State {
	f, err := Load(dir)
	if err != nil {
		return nil
	}
	snaps := []*Snapshot{f.Confirmed}
	if f.Pending != nil {
		snaps = append(snaps, f.Pending.Applied, f.Pending.Restore)
	}
	var out []*model.State
	for _, s := range snaps {
		if s == nil {
			continue
		}
		if cfg, err := desired.Parse(s.Sources()); err == nil {
			out = append(out, cfg.State)
		}
	}
	return out
}
