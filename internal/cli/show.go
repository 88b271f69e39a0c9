package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/engine"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/nftcompile"
)

const defaultProtocol = model.DefaultProtocol

// showReport is show's JSON: the configuration show prints (state, then the
// pools section), as JSON in the same key order, each pool's usage, and
// with --all the objects that are not netreconcile's (foreign, what the text
// prints as comments; nil without --all). The rendered YAML is the one
// source: the JSON cannot say anything the text does not.
func showReport(ctx context.Context, eng *engine.Engine, conf *model.State, state, pools, foreign []byte) (showJSON, error) {
	r := showJSON{jsonHeader: header(), Pools: []poolListing{}, jsonFailure: jsonFailure{Errors: []jsonFieldError{}}}
	var b bytes.Buffer
	if err := yamlToJSON(&b, append(append([]byte{}, state...), pools...)); err != nil {
		return r, fmt.Errorf("show as json: %w", err)
	}
	r.Configuration = b.Bytes()
	if foreign != nil {
		var f bytes.Buffer
		if err := yamlToJSON(&f, foreign); err != nil {
			return r, fmt.Errorf("show the foreign objects as json: %w", err)
		}
		r.Foreign = f.Bytes()
	}
	if conf == nil || len(conf.Pools) == 0 {
		return r, nil
	}
	reg, err := eng.OpenRegistry(conf)
	if reg == nil || err != nil {
		return r, err
	}
	for _, p := range conf.Pools {
		l := poolListing{Pool: p.Name}
		u, err := reg.Usage(ctx, p.Name)
		if err != nil {
			return r, err
		}
		bs, err := reg.HeldBlocks(ctx, p.Name)
		if err != nil {
			return r, err
		}
		l.Usage, l.Blocks = usageOf(u), blocksOf(bs)
		r.Pools = append(r.Pools, l)
	}
	return r, nil
}

// yamlToJSON writes one YAML document as JSON, keeping the order of keys
// (a map would sort them) and each scalar's resolved type: an integer, a
// float, a boolean or null as such, everything else as a string. Comments
// are left out.
func yamlToJSON(b *bytes.Buffer, data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		return fmt.Errorf("not one YAML document")
	}
	return nodeJSON(b, doc.Content[0])
}

func nodeJSON(b *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			b.Write(k)
			b.WriteByte(':')
			if err := nodeJSON(b, n.Content[i+1]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := nodeJSON(b, c); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		b.Write(scalarJSON(n))
	case yaml.AliasNode:
		return nodeJSON(b, n.Alias)
	default:
		return fmt.Errorf("unexpected YAML node at line %d", n.Line)
	}
	return nil
}

func scalarJSON(n *yaml.Node) []byte {
	switch n.ShortTag() {
	case "!!int":
		if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return strconv.AppendInt(nil, v, 10)
		}
		if v, err := strconv.ParseUint(n.Value, 0, 64); err == nil {
			return strconv.AppendUint(nil, v, 10)
		}
	case "!!float":
		if v, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
			out, _ := json.Marshal(v)
			return out
		}
	case "!!bool":
		var v bool
		if n.Decode(&v) == nil {
			return strconv.AppendBool(nil, v)
		}
	case "!!null":
		return []byte("null")
	}
	out, _ := json.Marshal(n.Value)
	return out
}

// inNamespace is the kernel's way to run a program in its namespace.
type inNamespace interface {
	InNamespace(f func() error) error
}

// listedRules gives the rules of the state's nftables tables their text:
// the one netreconcile wrote, where the rule is still as written
// (NftRule.Intact), else as nft lists them; and the sets, maps and objects nft declares their words:
// what show prints, and what the diff takes for the same objects (a rule
// nft lists shorter than it compiles is judged by its listing: engine's
// listedAlike). Tables with none of these need no nft.
func listedRules(ctx context.Context, eng *engine.Engine, st *model.State) error {
	var out string
	for i := range st.NFTables {
		t := &st.NFTables[i]
		n := len(t.Objects)
		for j := range t.Chains {
			n += len(t.Chains[j].Rules)
		}
		for j := range t.Sets {
			if t.Sets[j].Raw != nil {
				n++
			}
		}
		if n == 0 {
			continue
		}
		if out == "" {
			list := func() error {
				var err error
				out, err = engine.DefaultCompiler.List(ctx)
				return err
			}
			var err error
			if ns, ok := eng.Kernel.(inNamespace); ok {
				err = ns.InNamespace(list)
			} else {
				err = list()
			}
			if err != nil {
				return fmt.Errorf("list the rules of nftables table %s: %w", t.Key(), err)
			}
		}
		listed := nftcompile.ParseListing(out, t.Family, t.Name)
		for j := range t.Chains {
			c := &t.Chains[j]
			for k := range c.Rules {
				if r := &c.Rules[k]; r.Intact() && r.Text != "" {
					// As written: nft's listing of a rule is not always
					// a text nft compiles back to it ({ 10.0.0.0/8,
					// 10.0.0.1 } merges into a one-element set, which
					// nft lists as { 10.0.0.0/8 } and compiles back as
					// a plain match).
					continue
				}
				c.Rules[k].Text = listed.Rules[c.Name][c.Rules[k].Handle]
			}
		}
		for j := range t.Sets {
			if s := &t.Sets[j]; s.Raw != nil {
				s.Listed = listed.Sets[s.Name]
			}
		}
		for j := range t.Objects {
			t.Objects[j].Decl = listed.Objects[t.Objects[j].Name]
		}
	}
	return nil
}
