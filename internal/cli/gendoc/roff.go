package main

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/netreconcile/netreconcile/internal/cli"
)

// The help texts follow a few conventions, which the conversion reads:
//   - "Usage: netreconcile CMD ..." first (the program's own help starts
//     with "netreconcile - SUMMARY" and a "Usage:" block);
//   - blocks separated by blank lines; an unindented line ending in ":"
//     over indented lines is a heading, as is "Exit status: ..." starting
//     a paragraph;
//   - indented lines are options ("  -c, --config FILE  description", the
//     description going on at deeper indentation), bullets ("  - text"),
//     two-column lists ("  validate   check the configuration"), or else
//     laid out by hand, and kept as they are (no-fill).
// Nothing is dropped: whatever the conversion does not recognise is printed
// verbatim, and roff_test.go checks every word of the help against what
// groff renders.

// pageName is the manual page of a command: netreconcile, netreconcile-apply,
// netreconcile-ipam-allocate.
func pageName(cmd string) string {
	if cmd == "" {
		return "netreconcile"
	}
	return "netreconcile-" + strings.ReplaceAll(cmd, " ", "-")
}

// manSections are the headings that become sections of their own (.SH, in
// capitals); any other heading is a subsection (.SS) of the current one.
var manSections = map[string]bool{
	"Options": true, "Common options": true, "Commands": true, "Exit status": true,
	"Examples": true, "Environment": true, "Files": true, "Notes": true,
}

var (
	// labelled is a paragraph that starts with its heading, one of
	// manSections: "Exit status: 0 ...".
	labelled = regexp.MustCompile(`^([A-Z][a-z]+(?: [a-z]+)?): (\S.*)$`)
	bullet   = regexp.MustCompile(`^( +)- (.*)$`)
	// twoColumn is an item of a two-column list: the term, two spaces or
	// more, its description.
	twoColumn = regexp.MustCompile(`^( +)(\S+(?: \S+)*?)( {2,})(\S.*)$`)
	// commandWord is a word of a usage line typed as it is.
	commandWord = regexp.MustCompile(`^[a-z][a-z|-]*$`)
)

func manPage(p cli.HelpPage, pages []cli.HelpPage, version, date string) string {
	name := pageName(p.Command)
	w := &roff{}
	w.req(fmt.Sprintf(".TH %s 8 %q %q %q", esc(strings.ToUpper(name)), date, "netreconcile "+version, "System Manager's Manual"))
	// Neither hyphenated nor justified: the text is full of options and
	// paths, which a reader types as they are.
	w.req(".nh")
	w.req(".ad l")
	w.req(".SH NAME")
	w.text(name + " - " + p.Summary)

	lines := strings.Split(strings.TrimRight(p.Text, "\n"), "\n")
	// The program's help names itself on its first line: that is NAME.
	if len(lines) > 0 && strings.HasPrefix(lines[0], "netreconcile - ") {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	// The usage: "Usage: SYNOPSIS" and lines indented under it.
	if len(lines) > 0 && strings.HasPrefix(lines[0], "Usage:") {
		syn := []string{strings.TrimSpace(strings.TrimPrefix(lines[0], "Usage:"))}
		lines = lines[1:]
		for len(lines) > 0 && indent(lines[0]) > 0 {
			syn = append(syn, strings.TrimSpace(lines[0]))
			lines = lines[1:]
		}
		w.req(".SH SYNOPSIS")
		w.req(".nf")
		for _, s := range syn {
			if s != "" {
				w.raw(synopsis(s))
			}
		}
		w.req(".fi")
	}
	section := ""
	for _, b := range blocks(lines) {
		first := b[0]
		isHeading := indent(first) == 0 && strings.HasSuffix(first, ":") && (len(b) == 1 || indent(b[1]) > 0)
		isLabelled := indent(first) == 0 && labelled.MatchString(first) && manSections[labelled.FindStringSubmatch(first)[1]]
		if section == "" && !(isHeading && manSections[strings.TrimSuffix(first, ":")]) && !isLabelled {
			w.req(".SH DESCRIPTION")
			section = "Description"
		}
		switch {
		case isHeading:
			h := strings.TrimSuffix(first, ":")
			w.heading(h)
			if manSections[h] {
				section = h
			}
			w.indented(b[1:], section)
		case isLabelled:
			m := labelled.FindStringSubmatch(first)
			w.heading(m[1])
			if manSections[m[1]] {
				section = m[1]
			}
			w.mixed(append([]string{m[2]}, b[1:]...), section)
		default:
			w.req(".PP")
			w.mixed(b, section)
		}
	}
	w.req(".SH SEE ALSO")
	var refs []string
	for _, q := range pages {
		switch {
		case p.Command == "" && q.Command != "":
			refs = append(refs, pageName(q.Command))
		case p.Command != "" && q.Command == "":
			refs = append(refs, pageName(q.Command))
		case strings.Contains(p.Command, " ") && q.Command == strings.Fields(p.Command)[0]:
			refs = append(refs, pageName(q.Command))
		case q.Command != p.Command && strings.HasPrefix(q.Command, p.Command+" "):
			refs = append(refs, pageName(q.Command))
		}
	}
	for i, r := range refs {
		sep := ","
		if i == len(refs)-1 {
			sep = ""
		}
		w.req(fmt.Sprintf(".BR %s (8)%s", esc(r), sep))
	}
	return w.String()
}

// roff collects the page's lines.
type roff struct{ strings.Builder }

// req writes a request (a line starting with "."), as is.
func (w *roff) req(s string) { w.WriteString(s + "\n") }

// raw writes a text line already escaped.
func (w *roff) raw(s string) {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	w.WriteString(s + "\n")
}

// text writes a line of running text.
func (w *roff) text(s string) { w.raw(esc(strings.TrimSpace(s))) }

func (w *roff) heading(h string) {
	if manSections[h] {
		w.req(".SH " + quoteArg(strings.ToUpper(h)))
	} else {
		w.req(".SS " + quoteArg(h))
	}
}

// mixed writes paragraph lines (unindented) and indented runs as they come.
func (w *roff) mixed(lines []string, section string) {
	for i := 0; len(lines) > 0; i++ {
		n := 0
		if indent(lines[0]) == 0 {
			if i > 0 {
				// Text after a list is a paragraph of its own.
				w.req(".PP")
			}
			for n < len(lines) && indent(lines[n]) == 0 {
				w.text(lines[n])
				n++
			}
		} else {
			for n < len(lines) && indent(lines[n]) > 0 {
				n++
			}
			w.indented(lines[:n], section)
		}
		lines = lines[n:]
	}
}

// indented writes a run of indented lines: options, bullets, a two-column
// list, or lines kept as they are.
func (w *roff) indented(lines []string, section string) {
	for len(lines) > 0 {
		line := lines[0]
		in := indent(line)
		if o, descAt, ok := cli.ParseOptionLine(line); ok {
			n := 1
			for n < len(lines) && indent(lines[n]) > in {
				if _, _, isOpt := cli.ParseOptionLine(lines[n]); isOpt {
					break
				}
				n++
			}
			w.req(".TP")
			w.raw(optionTag(o))
			body := lines[1:n]
			bodyIn := descAt
			if o.Description == "" && len(body) > 0 {
				bodyIn = indent(body[0])
			}
			if o.Description != "" {
				w.text(o.Description)
			}
			w.body(body, bodyIn)
			lines = lines[n:]
			continue
		}
		if m := bullet.FindStringSubmatch(line); m != nil {
			n := 1
			for n < len(lines) && indent(lines[n]) == in+2 {
				n++
			}
			w.req(`.IP \(bu 2`)
			w.text(m[2])
			for _, l := range lines[1:n] {
				w.text(l)
			}
			lines = lines[n:]
			continue
		}
		// Up to the next option or bullet: a two-column list, or lines
		// laid out by hand.
		n := 1
		for n < len(lines) {
			if _, _, ok := cli.ParseOptionLine(lines[n]); ok || bullet.MatchString(lines[n]) {
				break
			}
			n++
		}
		switch {
		case section == "Examples":
			w.nofill(lines[:n], minIndent(lines[:n]), true)
		case w.twoColumns(lines[:n]):
		case prose(lines[:n]):
			w.req(".RS 2")
			for _, l := range lines[:n] {
				w.text(l)
			}
			w.req(".RE")
		default:
			w.nofill(lines[:n], minIndent(lines[:n]), true)
		}
		lines = lines[n:]
	}
}

// prose reports whether indented lines are running text: all at one
// indentation, with no column gap (two spaces) inside.
func prose(lines []string) bool {
	for _, l := range lines {
		if indent(l) != indent(lines[0]) || strings.Contains(strings.TrimSpace(l), "  ") {
			return false
		}
	}
	return true
}

// body writes an option's description: lines at its column are running
// text, deeper ones are kept as they are.
func (w *roff) body(lines []string, col int) {
	for len(lines) > 0 {
		n := 0
		if indent(lines[0]) <= col {
			for n < len(lines) && indent(lines[n]) <= col {
				w.text(lines[n])
				n++
			}
		} else {
			for n < len(lines) && indent(lines[n]) > col {
				n++
			}
			w.nofill(lines[:n], col, false)
		}
		lines = lines[n:]
	}
}

// twoColumns writes lines as a list of terms and descriptions, if they are
// one: two items or more, each description starting at one column (after
// one space or more) and going on at that column; it reports whether it
// wrote them.
func (w *roff) twoColumns(lines []string) bool {
	type item struct {
		term string
		desc []string
	}
	m := twoColumn.FindStringSubmatch(lines[0])
	if m == nil {
		return false
	}
	base, col := len(m[1]), len(m[1])+len(m[2])+len(m[3])
	var items []item
	for _, l := range lines {
		switch {
		case indent(l) == col && len(items) > 0:
			items[len(items)-1].desc = append(items[len(items)-1].desc, l)
		case indent(l) == base && len(l) > col && l[col-1] == ' ' && l[col] != ' ':
			items = append(items, item{term: strings.TrimSpace(l[:col]), desc: []string{l[col:]}})
		default:
			return false
		}
	}
	if len(items) < 2 {
		return false
	}
	// Compact, as in the help, with the terms' column as wide as the
	// longest term needs (a longer term goes on a line of its own).
	width := 0
	for _, it := range items {
		width = max(width, utf8.RuneCountInString(it.term))
	}
	w.req(".PD 0")
	for _, it := range items {
		w.req(fmt.Sprintf(".TP %d", min(width, 14)+2))
		w.raw(`\fB` + esc(it.term) + `\fR`)
		for i, d := range it.desc {
			w.text(d)
			// A description that starts with the term's options
			// ("allocate  --owner ID [--pool P]") keeps them on a line
			// of their own.
			if i == 0 && len(it.desc) > 1 && strings.IndexAny(strings.TrimSpace(d), "-[") == 0 {
				w.req(".br")
			}
		}
	}
	w.req(".PD")
	return true
}

// nofill writes lines as they are, less cut columns of indentation, and
// shifted two columns right when shift (not inside an option's
// description, whose indentation .RS would reset).
func (w *roff) nofill(lines []string, cut int, shift bool) {
	if shift {
		w.req(".RS 2")
	}
	w.req(".nf")
	for _, l := range lines {
		if len(l) >= cut {
			l = l[cut:]
		}
		w.raw(esc(strings.TrimRight(l, " ")))
	}
	w.req(".fi")
	if shift {
		w.req(".RE")
	}
}

// optionTag is an option's term: \fB\-c\fR, \fB\-\-config\fR \fIFILE\fR.
func optionTag(o cli.HelpOption) string {
	s := `\fB` + esc(o.Long) + `\fR`
	if o.Short != "" {
		s = `\fB` + esc(o.Short) + `\fR, ` + s
	}
	if o.Arg != "" {
		s += ` \fI` + esc(o.Arg) + `\fR`
	}
	return s
}

// synopsis sets a usage line's command words in bold.
func synopsis(s string) string {
	words := strings.Fields(s)
	n := 0
	for n < len(words) && commandWord.MatchString(words[n]) {
		n++
	}
	out := `\fB` + esc(strings.Join(words[:n], " ")) + `\fR`
	if n < len(words) {
		out += " " + esc(strings.Join(words[n:], " "))
	}
	return out
}

// esc escapes text for roff: backslashes, hyphens as \- (every one a
// character to type, in options and commands alike), anything beyond ASCII
// by its code point.
func esc(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\e`)
		case r == '-':
			b.WriteString(`\-`)
		case r >= utf8.RuneSelf:
			fmt.Fprintf(&b, `\[u%04X]`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// quoteArg quotes a request's argument.
func quoteArg(s string) string {
	return `"` + strings.ReplaceAll(esc(s), `"`, `\(dq`) + `"`
}

// blocks splits lines at blank lines.
func blocks(lines []string) [][]string {
	var out [][]string
	var cur []string
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		cur = append(cur, l)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " ")) }

func minIndent(lines []string) int {
	m := -1
	for _, l := range lines {
		if i := indent(l); m < 0 || i < m {
			m = i
		}
	}
	return max(m, 0)
}
