package nftcompile

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
)

// List runs `nft -a -s -t list ruleset` in the caller's namespace (the
// caller arranges the thread's): every table as nft lists it, with handles,
// without counters' values and without set elements. show prints rules as
// nft lists them; nft reads that text back to the same bytecode. The whole
// ruleset, not `list table`: nft cannot name some tables in a command (one
// named like a keyword, "rt", "ct"…), and -t keeps the output to the rules.
func (n *Nft) List(ctx context.Context) (string, error) {
	if _, err := n.Version(ctx); err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, n.path(), "-a", "-s", "-t", "list", "ruleset")
	cmd.Env = []string{"LC_ALL=C"}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("nft list ruleset: %w: %s", err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}

// ParseListing reads nft's listing of a ruleset for one table: the rules
// of each chain, by handle, in nft's words. A table's block starts with
// "table FAMILY NAME {" at the line's start; a rule is one line inside a
// chain's block, ending with its handle ("# handle N"; the last such mark:
// a comment may hold the words); the chain's own lines (type, hook,
// policy) carry none. Lines it does not know are skipped: what it returns
// is what it could place.
func ParseListing(out, family, table string) map[string]map[uint64]string {
	rules := map[string]map[uint64]string{}
	chain := ""
	depth := 0 // of the chain's block, counted by lines that open and close
	in := false
	head := "table " + family + " " + table + " {"
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if !strings.HasPrefix(line, "\t") && !strings.HasPrefix(line, " ") {
			// A line at the start: a table opens or closes.
			in = strings.HasPrefix(line, head) && chain == ""
			chain = ""
			continue
		}
		if !in {
			continue
		}
		l := strings.TrimSpace(line)
		if chain == "" {
			if name, ok := strings.CutPrefix(l, "chain "); ok {
				if i := strings.Index(name, " {"); i > 0 {
					chain = name[:i]
					depth = 1
					if rules[chain] == nil {
						rules[chain] = map[uint64]string{}
					}
				}
			}
			continue
		}
		if l == "}" {
			if depth--; depth == 0 {
				chain = ""
			}
			continue
		}
		i := strings.LastIndex(l, " # handle ")
		if i < 0 {
			continue
		}
		h, err := strconv.ParseUint(l[i+len(" # handle "):], 10, 64)
		if err != nil || h == 0 {
			continue
		}
		if text := strings.TrimSpace(l[:i]); text != "" {
			rules[chain][h] = text
		}
	}
	return rules
}
