package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// Saved plans (diff --out, apply --plan), --max-disruption and --strict:
// the checks a plan passes before apply runs it (docs/plans.md).

// staleError: apply --plan found the saved plan stale.
type staleError struct {
	path  string
	diffs []string
}

func (e *staleError) Error() string {
	return fmt.Sprintf("the saved plan %s is stale: nothing was changed. What differs now:\n  %s\nReview a new plan (netreconcile diff --out FILE) and apply that",
		e.path, strings.Join(e.diffs, "\n  "))
}

// disruptionError: apply --max-disruption refused a plan.
type disruptionError struct {
	max diff.Disruption
	ops []diff.Op
}

func (e *disruptionError) Error() string {
	lines := make([]string, len(e.ops))
	for i := range e.ops {
		var b strings.Builder
		diff.WriteOps(&b, []*diff.Op{&e.ops[i]})
		lines[i], _, _ = strings.Cut(b.String(), "\n")
	}
	return fmt.Sprintf("%d operation(s) disrupt more than --max-disruption %s allows, nothing was changed:\n  %s\nApply them with a higher --max-disruption (or without it) when you accept that",
		len(e.ops), e.max, strings.Join(lines, "\n  "))
}

// strictError: --strict and the plan warns.
type strictError struct{ warnings []diff.Warning }

func (e *strictError) Error() string {
	ws := make([]string, len(e.warnings))
	for i, w := range e.warnings {
		ws[i] = w.String()
	}
	return fmt.Sprintf("%d warning(s) and --strict, nothing was changed:\n  %s", len(e.warnings), strings.Join(ws, "\n  "))
}

// exitFor is the exit code of an error from the gates.
func exitFor(err error) int {
	var s *staleError
	var d *disruptionError
	switch {
	case errors.As(err, &s):
		return ExitStale
	case errors.As(err, &d):
		return ExitDisruption
	}
	return ExitError
}

// disruptionFlag is --max-disruption.
type disruptionFlag struct{ v *diff.Disruption }

func (f *disruptionFlag) String() string {
	if f.v == nil {
		return ""
	}
	return f.v.String()
}

func (f *disruptionFlag) Set(s string) error {
	d, err := diff.ParseDisruption(s)
	if err != nil {
		return err
	}
	f.v = &d
	return nil
}

// planTarget is where this command plans: what a saved plan records and
// apply --plan compares.
func (g *globals) planTarget() (diff.PlanTarget, error) {
	host, _ := os.Hostname()
	sd, err := filepath.Abs(g.stateDir)
	if err != nil {
		return diff.PlanTarget{}, err
	}
	cf, err := filepath.Abs(g.config)
	if err != nil {
		return diff.PlanTarget{}, err
	}
	return diff.PlanTarget{Host: host, Netns: g.nsPath(), StateDir: sd, Config: cf}, nil
}

// planInputs are the inputs of a plan made from snap and the state parsed
// from it: each file's digest and each secret's under salt.
func planInputs(snap *safeapply.Snapshot, salt string, cfg *desired.Config) ([]diff.PlanInput, error) {
	var out []diff.PlanInput
	for i, f := range snap.Files {
		in := diff.PlanInput{Role: diff.InputConfig, Path: f.Path, Digest: diff.FileDigest(f.Data)}
		switch {
		case f.Side:
			in.Role, in.Name = diff.InputSide, f.Path
		case i > 0:
			in.Role, in.Name = diff.InputDropIn, filepath.Base(f.Path)
		}
		out = append(out, in)
	}
	secrets, err := diff.SecretInputs(salt, cfg.State)
	if err != nil {
		return nil, err
	}
	return append(out, secrets...), nil
}

func conflictList(err error) []string {
	var cs diff.Conflicts
	if errors.As(err, &cs) {
		return append([]string(nil), cs...)
	}
	return nil
}

// savedOf is the saved form of plan, made by eng from snap.
func (g *globals) savedOf(plan *diff.Plan, eng *engine.Engine, snap *safeapply.Snapshot, cfg *desired.Config, salt string, conflicts error) (*diff.SavedPlan, error) {
	target, err := g.planTarget()
	if err != nil {
		return nil, err
	}
	inputs, err := planInputs(snap, salt, cfg)
	if err != nil {
		return nil, err
	}
	return diff.Save(plan, eng.LastRead(), salt, target, inputs, conflictList(conflicts), time.Now())
}

// newSalt is a fresh plan's salt.
func newSalt() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return diff.NewSalt(b[:]), nil
}

// readSavedPlan reads and checks --plan FILE (as root's process handed it
// when this command runs as the service user: runas_linux.go).
func readSavedPlan(path string) (*diff.SavedPlan, error) {
	var r io.ReadCloser
	if f := handedPlanIn(); f != nil {
		r = f
	} else {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("--plan: %w", err)
		}
		r = f
	}
	defer r.Close()
	s, err := diff.DecodeSaved(r)
	if err != nil {
		return nil, fmt.Errorf("--plan %s: %w", path, err)
	}
	return s, nil
}

// writeSavedPlan writes diff --out FILE: replaced atomically, mode 0600
// (a plan names the host's addresses and keys' places; never a key).
func writeSavedPlan(path string, s *diff.SavedPlan) error {
	if f := handedPlanOut(); f != nil {
		defer f.Close()
		if err := s.Encode(f); err != nil {
			return fmt.Errorf("--out %s: %w", path, err)
		}
		return f.Sync()
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := s.Encode(tmp); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	ok = true
	return nil
}

// planGate holds apply's checks of a plan: a saved plan (--plan), the
// disruption allowed (--max-disruption) and --strict. Each check runs on
// a dry run first (before): a refused plan has written nothing, not even
// a pool's allocation; then on the plan apply runs (after), which differs
// from the dry run only by the pool addresses it allocates.
type planGate struct {
	g      *globals
	path   string
	saved  *diff.SavedPlan
	max    *diff.Disruption
	strict bool

	// What the checks found, for the report.
	warnings []diff.Warning
	stale    []string
	refused  []diff.Op
	// dry is the saved form of the dry run (with --plan).
	dry *diff.SavedPlan
}

func (p *planGate) active() bool { return p.saved != nil || p.max != nil || p.strict }

// before checks the dry run's plan of cfg, read from snap.
func (p *planGate) before(ctx context.Context, eng *engine.Engine, snap *safeapply.Snapshot, cfg *desired.Config) error {
	if !p.active() {
		return nil
	}
	plan, _, conflicts := eng.PlanDesired(ctx, cfg.State, true)
	if plan == nil {
		return conflicts
	}
	if p.saved != nil {
		fresh, err := p.g.savedOf(plan, eng, snap, cfg, p.saved.Salt, conflicts)
		if err != nil {
			return err
		}
		if d := p.saved.Differences(fresh); len(d) > 0 {
			p.stale = d
			return &staleError{p.path, d}
		}
		p.dry = fresh
	}
	return p.judge(plan)
}

// judge applies --strict and --max-disruption to plan.
func (p *planGate) judge(plan *diff.Plan) error {
	p.warnings = plan.Warnings
	if p.strict && len(plan.Warnings) > 0 {
		return &strictError{plan.Warnings}
	}
	if p.max != nil {
		if above := plan.Above(*p.max); len(above) > 0 {
			p.refused = nil
			for _, op := range above {
				p.refused = append(p.refused, *op)
			}
			return &disruptionError{*p.max, p.refused}
		}
	}
	return nil
}

// after checks the plan apply is about to run: with --plan, it must be
// the dry run's but for the pool addresses the saved plan listed as
// pending (and the routes exporting their blocks), which an apply
// allocates.
func (p *planGate) after(plan *diff.Plan, eng *engine.Engine, snap *safeapply.Snapshot, cfg *desired.Config, conflicts error) error {
	if !p.active() {
		p.warnings = plan.Warnings
		return nil
	}
	if p.saved != nil {
		fresh, err := p.g.savedOf(plan, eng, snap, cfg, p.saved.Salt, conflicts)
		if err != nil {
			return err
		}
		if d := allocationsOnly(p.dry, fresh, cfg); len(d) > 0 {
			p.stale = d
			return &staleError{p.path, d}
		}
	}
	return p.judge(plan)
}

// allocationsOnly lists how apply's plan differs from the dry run's beyond
// what the dry run's pending entries stand for: an address created on a
// link that had one pending, a route in the export table of a pool that
// had one pending.
func allocationsOnly(dry, applied *diff.SavedPlan, cfg *desired.Config) []string {
	pendingLinks := map[string]bool{}
	pools := map[string]bool{}
	for _, op := range dry.Pending {
		if i := strings.LastIndex(op.ID, " dev "); i >= 0 {
			pendingLinks[op.ID[i+len(" dev "):]] = true
		}
	}
	for _, pa := range cfg.State.PoolAddresses {
		if pendingLinks[pa.Link] {
			pools[pa.Pool] = true
		}
	}
	exportTables := map[uint32]bool{}
	for _, pl := range cfg.State.Pools {
		if pools[pl.Name] {
			exportTables[pl.ExportTable] = true
		}
	}
	var kept []diff.SavedOp
	for _, sop := range applied.Ops {
		op := sop.Op()
		switch {
		case op.Kind == diff.KindAddress && op.Action == diff.Create && op.Address != nil && pendingLinks[op.Address.Link]:
			continue
		case op.Kind == diff.KindRoute && op.Route != nil && exportTables[op.Route.Table] && op.Route.Dev == engine.ExportDev:
			continue
		}
		kept = append(kept, sop)
	}
	var want []diff.SavedOp
	for _, sop := range dry.Ops {
		if op := sop.Op(); op.Kind == diff.KindRoute && op.Route != nil && exportTables[op.Route.Table] && op.Route.Dev == engine.ExportDev {
			continue
		}
		want = append(want, sop)
	}
	return diff.OpDifferences(want, kept)
}
