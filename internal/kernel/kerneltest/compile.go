package kerneltest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
)

// Compiler is an nftcompile.Compiler for tests of the stages above: a rule
// compiles to opaque bytes, its text with runs of spaces made one, so that
// two texts that differ only in spacing are the same rule (as two wordings
// nft compiles alike are). It counts the rules it compiled.
type Compiler struct {
	// Refuse, when set, says why nft would refuse a text ("" it takes it).
	Refuse func(text string) string
	// Ver is the version it says it is ("fake nft" when empty).
	Ver string

	mu       sync.Mutex
	compiled int
}

var _ nftcompile.Compiler = (*Compiler)(nil)

// NFTCompiler returns the kernel's compiler: an engine on this kernel
// compiles with it, not with nft.
func (f *Kernel) NFTCompiler() nftcompile.Compiler {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.Compiler == nil {
		f.Compiler = &Compiler{}
	}
	return f.Compiler
}

// Version says which nft this is.
func (c *Compiler) Version(context.Context) (string, error) {
	if c.Ver == "" {
		return "fake nft", nil
	}
	return c.Ver, nil
}

// Compile compiles each rule to its normalised text, each set nft declares
// and each object to its texts.
func (c *Compiler) Compile(_ context.Context, req *nftcompile.Request) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs nftcompile.Errors
	for _, t := range req.Decls {
		for i := range t.Sets {
			s := &t.Sets[i]
			if s.Decl == "" {
				continue
			}
			raw := &model.NftRawSet{Spec: []byte(s.Decl), SpecFP: Fingerprint(t.Family, s.Decl)}
			for _, e := range s.ElemTexts {
				raw.Elems = append(raw.Elems, []byte(e))
				raw.ElemFPs = append(raw.ElemFPs, Fingerprint(t.Family, e))
			}
			s.Raw = raw
		}
		for i := range t.Objects {
			o := &t.Objects[i]
			o.Raw = &model.NftRawObj{Type: 1, Data: []byte(o.Decl), Fingerprint: Fingerprint(t.Family, o.Decl)}
		}
	}
	for _, r := range req.Rules {
		if c.Refuse != nil {
			if why := c.Refuse(r.Rule.Text); why != "" {
				errs = append(errs, nftcompile.Error{Pos: r.Rule.Source.At(0), Path: r.Rule.Source.Path(), Msg: why})
				continue
			}
		}
		c.compiled++
		fp := Fingerprint(r.Table.Family, r.Rule.Text)
		r.Rule.Compiled = &model.NftCompiled{Exprs: []byte(strings.Join(strings.Fields(r.Rule.Text), " ")), Fingerprint: fp}
		r.Rule.Fingerprint = fp
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// Fingerprint is the fingerprint the fake compiles a text of a family to.
func Fingerprint(family, text string) string {
	h := sha256.Sum256([]byte(family + "\x00" + strings.Join(strings.Fields(text), " ")))
	return hex.EncodeToString(h[:16])
}

// AsWritten gives the rules of a table the fingerprints and markers they
// would have had the fake compiled and written them: a table put in the
// kernel as if netreconcile had applied it.
func AsWritten(t *model.NftTable) {
	for i := range t.Chains {
		for j := range t.Chains[i].Rules {
			r := &t.Chains[i].Rules[j]
			r.Fingerprint = Fingerprint(t.Family, r.Text)
			r.Marked = r.Fingerprint
		}
	}
}

// Compiled returns how many rules were compiled so far.
func (c *Compiler) Compiled() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.compiled
}
