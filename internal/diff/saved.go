package diff

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// A saved plan (diff --out FILE, apply --plan FILE) is the plan as diff
// showed it, with what it was computed from: a digest of every
// configuration file and secret it read, and per op a digest of what the
// op writes and of the kernel object it was planned from.
//
// The file grants nothing. apply never runs an op read from it: it
// computes a fresh plan from the files and the kernel, as a plain apply
// does, and runs that plan only when it is the saved one, op for op,
// digest for digest (Differences). So a plan file that was edited, forged
// or copied from another host can at most make apply refuse: root never
// does more than a fresh plan of the same files would. It is decoded
// strictly all the same (DecodeSaved), since it is input a less
// privileged party may have written.

// SavedFormat names the file's format, and SavedSchema its version.
const (
	SavedFormat = "netreconcile-plan"
	SavedSchema = 1
)

// MaxSavedSize bounds what is read of a plan file: a plan of 100k routes
// with its digests is about 50 MB.
const MaxSavedSize = 512 << 20

// SavedPlan is the file.
type SavedPlan struct {
	Format        string     `json:"format"`
	SchemaVersion int        `json:"schema_version"`
	CreatedAt     time.Time  `json:"created_at"`
	Target        PlanTarget `json:"target"`
	// Salt keys every digest of a secret or of an op (digest.go): random
	// per plan, hex.
	Salt      string      `json:"salt"`
	Inputs    []PlanInput `json:"inputs"`
	Protocol  int         `json:"protocol"`
	Ops       []SavedOp   `json:"ops"`
	Pending   []SavedOp   `json:"pending"`
	Conflicts []string    `json:"conflicts"`
	Warnings  []Warning   `json:"warnings"`
}

// PlanTarget is where the plan was made: apply refuses it in another
// namespace, state directory or host. Config names the main file, for
// people: its content is what counts (Inputs).
type PlanTarget struct {
	Host     string `json:"host"`
	Netns    string `json:"netns"`
	StateDir string `json:"state_dir"`
	Config   string `json:"config"`
}

// Input roles.
const (
	InputConfig = "config"  // the main file
	InputDropIn = "drop-in" // a file of the drop-in directory
	InputSide   = "side"    // a side file the configuration names (routes-files, elements-file)
	InputSecret = "secret"  // a key the configuration names (file or credential)
)

// PlanInput is one file the plan was computed from. A configuration file
// has the SHA-256 of its content (sha256sum shows the same); a secret an
// HMAC of the key it holds, under the plan's salt, and never the key.
type PlanInput struct {
	Role string `json:"role"`
	// Name identifies the input across runs: "" for the main file, the
	// file's name for a drop-in, its path for a side file, the key's
	// place in the configuration for a secret
	// (links.wg0.wireguard.private-key-file).
	Name   string `json:"name"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// SavedOp is an op as the plan showed it, with its digests.
type SavedOp struct {
	Action     Action     `json:"action"`
	Kind       Kind       `json:"kind"`
	ID         string     `json:"id"`
	Summary    string     `json:"summary"`
	Changes    []Change   `json:"changes"`
	Reason     string     `json:"reason"`
	Disruption Disruption `json:"disruption"`
	// Digest is what the op writes (an HMAC under the salt).
	Digest string `json:"digest"`
	// Depends is the kernel's object the op was planned from ("absent"
	// when there was none).
	Depends string `json:"depends"`
	// op is the plan's op a saved op was made from (Save), with the
	// objects it carries; nil for one read from a file.
	op *Op
}

// Op is the op as a plan holds it: the one Save was given, or for a saved
// op read from a file, its text alone (no object: it is never applied).
func (o *SavedOp) Op() *Op {
	if o.op != nil {
		return o.op
	}
	return &Op{Action: o.Action, Kind: o.Kind, ID: o.ID, Summary: o.Summary, Changes: o.Changes, Reason: o.Reason, Disruption: o.Disruption}
}

func savedOp(op *Op, digest, depends string) SavedOp {
	changes := op.Changes
	if changes == nil {
		changes = []Change{}
	}
	return SavedOp{Action: op.Action, Kind: op.Kind, ID: op.ID, Summary: op.Summary, Changes: changes, Reason: op.Reason, Disruption: op.Disruption,
		Digest: digest, Depends: depends, op: op}
}

// NewSalt makes a plan's salt from 32 random bytes.
func NewSalt(random []byte) string { return hex.EncodeToString(random) }

// FileDigest is a configuration file's digest.
func FileDigest(data []byte) string {
	s := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(s[:])
}

// SecretDigest is a secret's digest under salt (hex).
func SecretDigest(salt string, s model.Secret) (string, error) {
	key, err := hex.DecodeString(salt)
	if err != nil {
		return "", fmt.Errorf("plan salt: %w", err)
	}
	m := hmac.New(sha256.New, key)
	b := s.Bytes() // only to be hashed, under the salt: never shown
	m.Write(b[:])
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil)), nil
}

// SecretInputs lists the secrets a desired state holds, with their
// digests under salt: each WireGuard link's private key and each peer's
// preshared key, by where the configuration names them.
func SecretInputs(salt string, st *model.State) ([]PlanInput, error) {
	var out []PlanInput
	add := func(name, path string, s model.Secret) error {
		if !s.IsSet() {
			return nil
		}
		d, err := SecretDigest(salt, s)
		if err != nil {
			return err
		}
		out = append(out, PlanInput{Role: InputSecret, Name: name, Path: path, Digest: d})
		return nil
	}
	for _, name := range st.SortedLinkNames() {
		w := st.Links[name].WireGuard
		if w == nil {
			continue
		}
		path, field := w.PrivateKeyFile, "private-key-file"
		if w.PrivateKeyCredential != "" {
			path, field = w.PrivateKeyCredential, "private-key-credential"
		}
		if err := add("links."+name+".wireguard."+field, path, w.PrivateKey); err != nil {
			return nil, err
		}
		for _, p := range w.Peers {
			if err := add("links."+name+".wireguard.peers["+p.PublicKey.String()+"].preshared-key-file", p.PresharedKeyFile, p.PresharedKey); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// Save makes the saved form of plan: its ops with their digests, the
// kernel state act it was computed from (engine.LastRead), and the inputs
// and target the caller gives.
func Save(plan *Plan, act *model.State, salt string, target PlanTarget, inputs []PlanInput, conflicts []string, now time.Time) (*SavedPlan, error) {
	key, err := hex.DecodeString(salt)
	if err != nil || len(key) < 16 {
		return nil, fmt.Errorf("plan salt: expected at least 16 bytes in hex")
	}
	d := &digester{key: key}
	idx := newKernelIndex(act, d)
	s := &SavedPlan{Format: SavedFormat, SchemaVersion: SavedSchema, CreatedAt: now.UTC(), Target: target, Salt: salt,
		Inputs: inputs, Protocol: plan.Protocol, Ops: make([]SavedOp, len(plan.Ops)), Pending: make([]SavedOp, len(plan.Pending)),
		Conflicts: conflicts, Warnings: plan.Warnings}
	for i := range plan.Ops {
		s.Ops[i] = savedOp(&plan.Ops[i], d.opDigest(&plan.Ops[i]), idx.depends(&plan.Ops[i]))
	}
	for i := range plan.Pending {
		s.Pending[i] = savedOp(&plan.Pending[i], d.opDigest(&plan.Pending[i]), "absent")
	}
	if s.Inputs == nil {
		s.Inputs = []PlanInput{}
	}
	if s.Conflicts == nil {
		s.Conflicts = []string{}
	}
	if s.Warnings == nil {
		s.Warnings = []Warning{}
	}
	return s, nil
}

// kernelIndex finds the kernel object an op was planned from, and keeps
// the digests of the big ones (a table, a WireGuard device) once.
type kernelIndex struct {
	act     *model.State
	d       *digester
	addrs   map[model.AddressKey]*model.Address
	routes  map[model.RouteKey]*model.Route
	rules   map[model.RuleKey]*model.Rule
	fou     map[model.FouKey]*model.FouPort
	tables  map[model.NftTableKey]*model.NftTable
	digests map[string]string
}

func newKernelIndex(act *model.State, d *digester) *kernelIndex {
	x := &kernelIndex{act: act, d: d, addrs: map[model.AddressKey]*model.Address{}, routes: map[model.RouteKey]*model.Route{},
		rules: map[model.RuleKey]*model.Rule{}, fou: map[model.FouKey]*model.FouPort{}, tables: map[model.NftTableKey]*model.NftTable{}, digests: map[string]string{}}
	if act == nil {
		return x
	}
	for i := range act.Addresses {
		x.addrs[act.Addresses[i].Key()] = &act.Addresses[i]
	}
	for i := range act.Routes {
		x.routes[act.Routes[i].Key()] = &act.Routes[i]
	}
	for i := range act.Rules {
		x.rules[act.Rules[i].Key()] = &act.Rules[i]
	}
	for i := range act.FouPorts {
		x.fou[act.FouPorts[i].Key()] = &act.FouPorts[i]
	}
	for i := range act.NFTables {
		x.tables[act.NFTables[i].Key()] = &act.NFTables[i]
	}
	return x
}

func (x *kernelIndex) cached(key string, v func() any) string {
	if d, ok := x.digests[key]; ok {
		return d
	}
	d := x.d.kernelDigest(v())
	x.digests[key] = d
	return d
}

// depends is the digest of the kernel object op was planned from.
func (x *kernelIndex) depends(op *Op) string {
	if x.act == nil {
		return "absent"
	}
	switch {
	case op.Kind == KindLink:
		return x.cached("link "+op.ID, func() any { return x.act.Links[op.ID] })
	case op.Kind == KindAddress && op.Address != nil:
		var objs []*model.Address
		for _, a := range []*model.Address{op.Address, op.Old} {
			if a != nil {
				objs = append(objs, x.addrs[a.Key()])
			}
		}
		return x.d.kernelDigest(&objs)
	case op.Kind == KindRoute && op.Route != nil:
		return x.d.kernelDigest(x.routes[op.Route.Key()])
	case op.Kind == KindRule && op.Rule != nil:
		return x.d.kernelDigest(x.rules[op.Rule.Key()])
	case op.Kind == KindFou && op.Fou != nil:
		return x.d.kernelDigest(x.fou[op.Fou.Key()])
	case op.Kind.IsNft():
		return x.cached("nft "+op.Table.String(), func() any { return x.tables[op.Table] })
	case op.WireGuard != nil:
		return x.cached("wg "+op.WireGuard.Link, func() any {
			if l := x.act.Links[op.WireGuard.Link]; l != nil {
				return l.WireGuard
			}
			return (*model.WireGuard)(nil)
		})
	case op.Kind == KindSysctl && op.Sysctl != nil:
		if h := model.FindSysctl(x.act.Sysctls, op.Sysctl.Key); h != nil {
			return x.d.kernelDigest(&model.Sysctl{Key: h.Key, Value: h.Value})
		}
		return "absent"
	}
	return "absent"
}

// Encode writes the plan as indented JSON.
func (s *SavedPlan) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// DecodeSaved reads a plan file strictly: one JSON object of at most
// MaxSavedSize bytes, no field it does not know, no key twice in an
// object, nothing after it, and every field of a known form (Validate).
func DecodeSaved(r io.Reader) (*SavedPlan, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxSavedSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxSavedSize {
		return nil, fmt.Errorf("larger than %d MiB: not a plan netreconcile wrote", MaxSavedSize>>20)
	}
	if err := noDuplicateKeys(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s SavedPlan
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("not a plan netreconcile wrote: %w", decodeError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the plan's JSON object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// decodeError says where the JSON is wrong without quoting it: the path
// may name any file root can read, and a syntax error quotes the
// character it met.
func decodeError(err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("not JSON at byte %d", se.Offset)
	}
	return err
}

// noDuplicateKeys walks the JSON tokens and refuses an object that has a
// key twice: encoding/json keeps the last, so a plan could show one value
// to a reader and be decoded with another.
func noDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token is a key
	}
	var stack []*frame
	path := func() string { return fmt.Sprintf("at byte %d", dec.InputOffset()) }
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("not a plan netreconcile wrote: %w", decodeError(err))
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				continue
			}
			k, _ := tok.(string)
			if top.keys[k] {
				return fmt.Errorf("key %q twice in one object %s", k, path())
			}
			top.keys[k] = true
			top.key = false
			continue
		}
		if len(stack) > maxDepth {
			return fmt.Errorf("nested deeper than %d %s", maxDepth, path())
		}
		switch d, _ := tok.(json.Delim); d {
		case '{':
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			continue
		case '[':
			if top != nil && top.object {
				top.key = true
			}
			stack = append(stack, &frame{})
			continue
		case ']':
			stack = stack[:len(stack)-1]
			if len(stack) > 0 && stack[len(stack)-1].object {
				stack[len(stack)-1].key = true
			}
			continue
		}
		if top != nil && top.object {
			top.key = true
		}
	}
}

// Limits of the fields of a plan file: far above what a plan holds, so
// that a forged file cannot make apply hold or print much.
const (
	maxSavedOps    = 50_000_000
	maxSavedString = 64 << 10
)

var (
	savedActions = map[Action]bool{Create: true, Update: true, Replace: true, Delete: true}
	savedKinds   = map[Kind]bool{KindLink: true, KindFou: true, KindAddress: true, KindRoute: true, KindRule: true, KindSysctl: true,
		KindWireGuard: true, KindWGPeer: true, KindNftTable: true, KindNftSet: true, KindNftElem: true, KindNftChain: true, KindNftRule: true}
)

func digestForm(d, prefix string) bool {
	rest, ok := strings.CutPrefix(d, prefix+":")
	if !ok || len(rest) != 64 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil && strings.ToLower(rest) == rest
}

// Validate checks every field's form; its errors name the field.
func (s *SavedPlan) Validate() error {
	if s.Format != SavedFormat {
		return fmt.Errorf("format: expected %q, found %.64q", SavedFormat, s.Format)
	}
	if s.SchemaVersion != SavedSchema {
		return fmt.Errorf("schema_version: expected %d, found %d (a plan of another netreconcile version: make it again with this one)", SavedSchema, s.SchemaVersion)
	}
	if b, err := hex.DecodeString(s.Salt); err != nil || len(b) != 32 || strings.ToLower(s.Salt) != s.Salt {
		return errors.New("salt: expected 64 lowercase hexadecimal digits")
	}
	if s.Protocol < 0 || s.Protocol > 255 {
		return fmt.Errorf("protocol: expected 0 to 255, found %d", s.Protocol)
	}
	for _, f := range []struct{ name, v string }{{"target.host", s.Target.Host}, {"target.netns", s.Target.Netns}, {"target.state_dir", s.Target.StateDir}, {"target.config", s.Target.Config}} {
		if err := checkString(f.name, f.v); err != nil {
			return err
		}
	}
	for _, f := range []struct{ name, v string }{{"target.state_dir", s.Target.StateDir}, {"target.config", s.Target.Config}} {
		if !filepath.IsAbs(f.v) || filepath.Clean(f.v) != f.v {
			return fmt.Errorf("%s: expected an absolute, clean path, found %.256q", f.name, f.v)
		}
	}
	if len(s.Inputs) > 1_000_000 {
		return fmt.Errorf("inputs: %d entries", len(s.Inputs))
	}
	seen := map[[2]string]bool{}
	for i, in := range s.Inputs {
		at := fmt.Sprintf("inputs[%d]", i)
		for _, f := range []struct{ name, v string }{{".name", in.Name}, {".path", in.Path}} {
			if err := checkString(at+f.name, f.v); err != nil {
				return err
			}
		}
		switch in.Role {
		case InputConfig, InputDropIn, InputSide:
			if !digestForm(in.Digest, "sha256") {
				return fmt.Errorf("%s.digest: expected sha256:HEX (64 digits), found %.128q", at, in.Digest)
			}
			if !filepath.IsAbs(in.Path) {
				return fmt.Errorf("%s.path: expected an absolute path, found %.256q", at, in.Path)
			}
		case InputSecret:
			if !digestForm(in.Digest, "hmac-sha256") {
				return fmt.Errorf("%s.digest: expected hmac-sha256:HEX (64 digits), found %.128q", at, in.Digest)
			}
		default:
			return fmt.Errorf("%s.role: expected %s, %s, %s or %s, found %.64q", at, InputConfig, InputDropIn, InputSide, InputSecret, in.Role)
		}
		k := [2]string{in.Role, in.Name}
		if seen[k] {
			return fmt.Errorf("%s: %s %q listed twice", at, in.Role, in.Name)
		}
		seen[k] = true
	}
	if len(s.Ops)+len(s.Pending) > maxSavedOps {
		return fmt.Errorf("ops: %d operations", len(s.Ops)+len(s.Pending))
	}
	for _, list := range []struct {
		name string
		ops  []SavedOp
	}{{"ops", s.Ops}, {"pending", s.Pending}} {
		for i := range list.ops {
			if err := list.ops[i].validate(fmt.Sprintf("%s[%d]", list.name, i)); err != nil {
				return err
			}
		}
	}
	for i, c := range s.Conflicts {
		if err := checkString(fmt.Sprintf("conflicts[%d]", i), c); err != nil {
			return err
		}
	}
	for i, w := range s.Warnings {
		for j, k := range w.Keys {
			if err := checkString(fmt.Sprintf("warnings[%d].keys[%d]", i, j), k); err != nil {
				return err
			}
		}
		for _, f := range []struct{ name, v string }{{".message", w.Message}, {".fix", w.Fix}} {
			if err := checkString(fmt.Sprintf("warnings[%d]%s", i, f.name), f.v); err != nil {
				return err
			}
		}
	}
	return nil
}

func (o *SavedOp) validate(at string) error {
	if !savedActions[o.Action] {
		return fmt.Errorf("%s.action: expected create, update, replace or delete, found %.64q", at, o.Action)
	}
	if !savedKinds[o.Kind] {
		return fmt.Errorf("%s.kind: unknown kind %.64q", at, o.Kind)
	}
	if o.ID == "" {
		return fmt.Errorf("%s.id: empty", at)
	}
	for _, f := range []struct{ name, v string }{{".id", o.ID}, {".summary", o.Summary}, {".reason", o.Reason}} {
		if err := checkString(at+f.name, f.v); err != nil {
			return err
		}
	}
	for j, c := range o.Changes {
		for _, f := range []struct{ name, v string }{{".field", c.Field}, {".from", c.From}, {".to", c.To}} {
			if err := checkString(fmt.Sprintf("%s.changes[%d]%s", at, j, f.name), f.v); err != nil {
				return err
			}
		}
	}
	if !digestForm(o.Digest, "hmac-sha256") {
		return fmt.Errorf("%s.digest: expected hmac-sha256:HEX (64 digits)", at)
	}
	if o.Depends != "absent" && !digestForm(o.Depends, "hmac-sha256") {
		return fmt.Errorf("%s.depends: expected hmac-sha256:HEX (64 digits) or absent", at)
	}
	return nil
}

// checkString refuses a string a plan never holds: longer than
// maxSavedString, or with a control character other than tab (a terminal
// escape in a reason would rewrite what the person reads).
func checkString(name, v string) error {
	if len(v) > maxSavedString {
		return fmt.Errorf("%s: longer than %d bytes", name, maxSavedString)
	}
	for _, r := range v {
		if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return fmt.Errorf("%s: holds the control character %U", name, r)
		}
	}
	return nil
}

// maxShown bounds the differences Differences lists one by one.
const maxShown = 40

// Differences lists why fresh, the plan made now from the same files and
// the kernel as it is, is not saved: the target, the inputs, the ops (in
// the plan's words), the conflicts. None means the saved plan may run.
func (s *SavedPlan) Differences(fresh *SavedPlan) []string {
	var out []string
	if s.Target.Host != fresh.Target.Host {
		out = append(out, fmt.Sprintf("made on host %q, applied on %q", s.Target.Host, fresh.Target.Host))
	}
	if s.Target.Netns != fresh.Target.Netns {
		out = append(out, fmt.Sprintf("made for namespace %s, applied to %s", orHost(s.Target.Netns), orHost(fresh.Target.Netns)))
	}
	if s.Target.StateDir != fresh.Target.StateDir {
		out = append(out, fmt.Sprintf("made with state directory %s, applied with %s", s.Target.StateDir, fresh.Target.StateDir))
	}
	out = append(out, inputDifferences(s.Inputs, fresh.Inputs)...)
	if s.Protocol != fresh.Protocol {
		out = append(out, fmt.Sprintf("protocol %d, now %d", s.Protocol, fresh.Protocol))
	}
	out = append(out, opDifferences("", s.Ops, fresh.Ops)...)
	out = append(out, opDifferences("pending ", s.Pending, fresh.Pending)...)
	if strings.Join(s.Conflicts, "\n") != strings.Join(fresh.Conflicts, "\n") {
		out = append(out, fmt.Sprintf("conflicts: %d planned, %d now", len(s.Conflicts), len(fresh.Conflicts)))
	}
	return out
}

func orHost(ns string) string {
	if ns == "" {
		return "(this process's own)"
	}
	return ns
}

func inputDifferences(saved, fresh []PlanInput) []string {
	key := func(in PlanInput) string { return in.Role + " " + in.Name }
	now := map[string]PlanInput{}
	for _, in := range fresh {
		now[key(in)] = in
	}
	was := map[string]bool{}
	var out []string
	describe := func(in PlanInput) string {
		switch in.Role {
		case InputConfig:
			return "configuration file " + in.Path
		case InputDropIn:
			return "drop-in " + in.Path
		case InputSide:
			return "side file " + in.Path
		}
		return "secret " + in.Name + " (" + in.Path + ")"
	}
	for _, in := range saved {
		was[key(in)] = true
		n, ok := now[key(in)]
		switch {
		case !ok:
			out = append(out, describe(in)+": gone")
		case n.Digest != in.Digest && in.Role == InputSecret:
			out = append(out, describe(in)+": changed (its content is not shown)")
		case n.Digest != in.Digest:
			out = append(out, describe(in)+": changed")
		}
	}
	for _, in := range fresh {
		if !was[key(in)] {
			out = append(out, describe(in)+": new")
		}
	}
	return out
}

// opLine is an op as the plan's text shows its first line.
func opLine(o *SavedOp) string {
	var b strings.Builder
	WriteOps(&b, []*Op{o.Op()})
	line, _, _ := strings.Cut(b.String(), "\n")
	return line
}

// sameText reports whether two ops read the same in a plan.
func sameText(a, b *SavedOp) bool {
	if a.Action != b.Action || a.Kind != b.Kind || a.ID != b.ID || a.Summary != b.Summary ||
		a.Reason != b.Reason || a.Disruption != b.Disruption || len(a.Changes) != len(b.Changes) {
		return false
	}
	for i := range a.Changes {
		if a.Changes[i] != b.Changes[i] {
			return false
		}
	}
	return true
}

// OpDifferences lists how two lists of ops differ, as Differences does.
func OpDifferences(saved, fresh []SavedOp) []string { return opDifferences("", saved, fresh) }

// opDifferences compares two lists of ops: each op is matched by its
// action, kind, id and how many such came before it.
func opDifferences(what string, saved, fresh []SavedOp) []string {
	type key struct {
		a   Action
		k   Kind
		id  string
		nth int
	}
	keys := func(ops []SavedOp) []key {
		n := map[key]int{}
		out := make([]key, len(ops))
		for i := range ops {
			k := key{ops[i].Action, ops[i].Kind, ops[i].ID, 0}
			out[i] = key{k.a, k.k, k.id, n[k]}
			n[k]++
		}
		return out
	}
	sk, fk := keys(saved), keys(fresh)
	at := map[key]int{}
	for i, k := range fk {
		at[k] = i
	}
	var out []string
	shown, more := 0, 0
	add := func(s string) {
		if shown < maxShown {
			out = append(out, s)
			shown++
		} else {
			more++
		}
	}
	matched := map[key]bool{}
	lastAt, outOfOrder := -1, false
	for i, k := range sk {
		j, ok := at[k]
		if !ok {
			add(what + "op no longer planned: " + opLine(&saved[i]))
			continue
		}
		matched[k] = true
		if j < lastAt {
			outOfOrder = true
		}
		lastAt = j
		switch {
		case !sameText(&saved[i], &fresh[j]):
			was, now := opLine(&saved[i])+changesText(&saved[i]), opLine(&fresh[j])+changesText(&fresh[j])
			// The output hides what looks like a key (a WireGuard
			// public key, which a rotated private key changes):
			// two lines that would print the same say so instead.
			if redact.String(was) == redact.String(now) {
				add(what + "op " + opLine(&saved[i]) + ": what it writes changed (in what the plan's text does not show)")
				break
			}
			add(what + "op planned as: " + was + "\n  is now: " + now)
		case saved[i].Depends != fresh[j].Depends:
			add(what + "op " + opLine(&saved[i]) + ": the kernel's object changed since the plan was made")
		case saved[i].Digest != fresh[j].Digest:
			add(what + "op " + opLine(&saved[i]) + ": what it writes changed (in what the plan's text does not show)")
		}
	}
	for j, k := range fk {
		if !matched[k] {
			add(what + "op now planned too: " + opLine(&fresh[j]))
		}
	}
	if outOfOrder {
		add(what + "ops are planned in another order now")
	}
	if more > 0 {
		out = append(out, fmt.Sprintf("… and %d more differences of %sops", more, what))
	}
	return out
}

func changesText(o *SavedOp) string {
	var b strings.Builder
	WriteOps(&b, []*Op{o.Op()})
	_, rest, _ := strings.Cut(strings.TrimRight(b.String(), "\n"), "\n")
	if rest == "" {
		return ""
	}
	return "\n  " + strings.ReplaceAll(rest, "\n", "\n  ")
}
