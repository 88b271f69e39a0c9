package nftcompile

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// List runs `nft -a -s list ruleset` in the caller's namespace (the caller
// arranges the thread's): every table as nft lists it, with handles and
// without counters' values. show prints rules, and the sets and objects
// nft declares, as nft lists them (most read back to the same bytecode;
// the diff judges the others by this listing). The whole ruleset, not
// `list table`: nft cannot name some tables in a command (one named like
// a keyword, "rt", "ct"…).
func (n *Nft) List(ctx context.Context) (string, error) {
	if _, err := n.Version(ctx); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, n.path(), "-a", "-s", "list", "ruleset")
	cmd.Env = []string{"LC_ALL=C"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nft list ruleset: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// Listing is one table of nft's listing: its rules by chain and handle,
// its sets and maps, its objects, each in nft's words.
type Listing struct {
	Rules   map[string]map[uint64]string
	Sets    map[string]*model.NftListedSet
	Objects map[string]string // the object's text as the file writes it
}

// maxListLine bounds a set's elements block: nft wraps it over lines.
const maxBlockLines = 1 << 20

// ParseListing reads nft's listing of a ruleset for one table. A table's
// block starts with "table FAMILY NAME {" at a line's start; in it, a
// chain's block holds its rules, one a line ending with its handle ("#
// handle N": the last such mark, a comment may hold the words), the
// chain's own lines (type, hook, policy) carrying none; a set's or map's
// block holds its keys a line each, its elements over one or more lines;
// an object's block its settings. Lines it does not know are kept in
// Other (sets) or skipped: what it returns is what it could place.
func ParseListing(out, family, table string) *Listing {
	l := &Listing{Rules: map[string]map[uint64]string{}, Sets: map[string]*model.NftListedSet{}, Objects: map[string]string{}}
	lines := strings.Split(out, "\n")
	head := "table " + family + " " + table + " {"
	in := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			// A line at the start: a table opens or closes.
			in = strings.HasPrefix(line, head)
			continue
		}
		if !in {
			continue
		}
		s := strings.TrimSpace(line)
		kind, name, ok := blockHead(s)
		if !ok {
			continue
		}
		// The block's lines, up to its closing brace at its depth.
		var body []string
		for i++; i < len(lines) && len(body) < maxBlockLines; i++ {
			b := strings.TrimSpace(lines[i])
			if b == "}" {
				break
			}
			if b != "" {
				body = append(body, b)
			}
		}
		switch kind {
		case "chain":
			l.Rules[name] = chainRules(body)
		case "set", "map":
			l.Sets[name] = listedSet(kind == "map", body)
		default:
			l.Objects[name] = objectText(kind, body)
		}
	}
	return l
}

// blockHead reads the first line of a block: "KIND NAME { # handle N".
func blockHead(s string) (kind, name string, ok bool) {
	i := strings.Index(s, " {")
	if i < 0 {
		return "", "", false
	}
	f := strings.Fields(s[:i])
	switch {
	case len(f) == 2:
		return f[0], f[1], true
	case len(f) == 3 && f[0] == "ct":
		return f[0] + " " + f[1], f[2], true
	}
	return "", "", false
}

func chainRules(body []string) map[uint64]string {
	rules := map[uint64]string{}
	for _, b := range body {
		text, h, ok := cutHandle(b)
		if !ok {
			continue
		}
		// A text that is all comment, or that still carries a handle mark
		// (a damaged or doubled line), is no rule nft would list.
		text = strings.TrimSpace(text)
		if _, _, again := cutHandle(text); again || text == "" || strings.HasPrefix(text, "#") || strings.HasSuffix(text, "# handle") {
			continue
		}
		rules[h] = text
	}
	return rules
}

// cutHandle splits "TEXT # handle N" into TEXT and N (N > 0).
func cutHandle(line string) (string, uint64, bool) {
	i := strings.LastIndex(line, " # handle ")
	if i < 0 {
		return "", 0, false
	}
	h, err := strconv.ParseUint(line[i+len(" # handle "):], 10, 64)
	if err != nil || h == 0 {
		return "", 0, false
	}
	return line[:i], h, true
}

func listedSet(isMap bool, body []string) *model.NftListedSet {
	s := &model.NftListedSet{Map: isMap}
	for i := 0; i < len(body); i++ {
		b := body[i]
		word, rest, _ := strings.Cut(b, " ")
		switch word {
		case "type":
			s.Type = rest
		case "typeof":
			s.Typeof = rest
		case "flags":
			s.Flags = strings.Split(rest, ",")
		case "timeout":
			s.Timeout = rest
		case "size":
			s.Size = rest
		case "policy":
			s.Policy = rest
		case "comment":
			s.Comment = rest
		case "counter":
			s.Counter = rest == ""
			if rest != "" {
				s.Other = append(s.Other, b)
			}
		case "auto-merge":
			s.AutoMerge = true
		case "elements":
			// "elements = { a, b," then more lines up to the closing
			// brace of the list.
			text, _ := strings.CutPrefix(rest, "= ")
			for depth(text) > 0 && i+1 < len(body) {
				i++
				text += " " + body[i]
			}
			s.Elements = splitElements(text)
		default:
			s.Other = append(s.Other, b)
		}
	}
	return s
}

// depth is how many braces a text leaves open, outside strings.
func depth(s string) int {
	d, quoted := 0, false
	for _, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{':
			d++
		case c == '}':
			d--
		}
	}
	return d
}

// splitElements splits "{ a, b . c, { d } }" at the commas outside
// strings and inner braces.
func splitElements(s string) []string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "{")
	s = strings.TrimSuffix(s, "}")
	var out []string
	d, quoted, start := 0, false, 0
	for i, c := range s {
		switch {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '{':
			d++
		case c == '}':
			d--
		case c == ',' && d == 0:
			if e := strings.TrimSpace(s[start:i]); e != "" {
				out = append(out, e)
			}
			start = i + 1
		}
	}
	if e := strings.TrimSpace(s[start:]); e != "" {
		out = append(out, e)
	}
	return out
}

// objectText is an object's settings as the file writes them: its kind,
// then its one line, or its lines in braces (ct helper { type "ftp"
// protocol tcp; l3proto ip; }).
func objectText(kind string, body []string) string {
	switch {
	case len(body) == 0:
		return kind
	case len(body) == 1 && !strings.HasPrefix(kind, "ct "):
		return kind + " " + body[0]
	}
	return kind + " { " + strings.Join(body, "; ") + "; }"
}
