// Package docs holds the tests of the documentation (README.md, docs/*.md,
// examples/, packaging/netreconcile.yaml): the shell blocks marked runnable
// run, the YAML blocks validate, and every command and option the docs name
// exists. This file reads Markdown as far as they need.
//
// Markers, in the Markdown source only:
//
//   - a fence whose info string is "sh runnable" is run by TestRunnableBlocks
//     (GitHub renders it as sh);
//   - an HTML comment "<!-- docs-test: ... -->" on the lines just above a
//     fence says how to check it (TestYAMLBlocksValidate):
//     "with YAML" merges YAML (a flow mapping) into the snippet before
//     netreconcile validate reads it: what the snippet refers to and leaves
//     out (a link, a key); "file PATH" says the block is the content of the
//     file PATH, which the snippets after it may name; "key PATH" makes a
//     WireGuard key file; "empty-file PATH" an empty file.
package docs

import (
	"regexp"
	"strings"
)

// Block is a fenced code block.
type Block struct {
	File string
	// Line is the line of the opening fence, from 1.
	Line int
	// Info is the fence's info string ("yaml", "sh runnable").
	Info string
	Text string
	// Directives are the docs-test comments above the fence, without
	// the marker ("with {links: ...}", "file static.routes").
	Directives []string
}

// Lang is the first word of the info string.
func (b Block) Lang() string {
	lang, _, _ := strings.Cut(b.Info, " ")
	return lang
}

// Runnable reports whether the block is marked to run.
func (b Block) Runnable() bool {
	_, rest, _ := strings.Cut(b.Info, " ")
	return b.Lang() == "sh" && strings.TrimSpace(rest) == "runnable"
}

var directiveRE = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$`)

// Blocks returns the fenced code blocks of a Markdown file.
func Blocks(file string, data []byte) []Block {
	var out []Block
	lines := strings.Split(string(data), "\n")
	var pending []string
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if m := directiveRE.FindStringSubmatch(line); m != nil {
			pending = append(pending, m[1])
			continue
		}
		if !strings.HasPrefix(trimmed, "```") {
			if trimmed != "" {
				pending = nil
			}
			continue
		}
		indent := len(line) - len(strings.TrimLeft(line, " "))
		b := Block{File: file, Line: i + 1, Info: strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), Directives: pending}
		pending = nil
		var text []string
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			l := lines[i]
			if len(l) >= indent && strings.TrimSpace(l[:indent]) == "" {
				l = l[indent:]
			}
			text = append(text, l)
		}
		b.Text = strings.Join(text, "\n") + "\n"
		out = append(out, b)
	}
	return out
}

// Span is an inline code span: its text (line breaks made spaces) and the
// line it starts on.
type Span struct {
	Line int
	Text string
}

var spanRE = regexp.MustCompile("`([^`]+)`")

// Spans returns the inline code spans of a Markdown file, outside its
// fenced blocks.
func Spans(data []byte) []Span {
	lines := strings.Split(string(data), "\n")
	// Fences blanked, so that positions keep their lines.
	inFence := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inFence = !inFence
			lines[i] = ""
			continue
		}
		if inFence {
			lines[i] = ""
		}
	}
	text := strings.Join(lines, "\n")
	var out []Span
	for _, m := range spanRE.FindAllStringSubmatchIndex(text, -1) {
		out = append(out, Span{
			Line: 1 + strings.Count(text[:m[0]], "\n"),
			Text: strings.ReplaceAll(text[m[2]:m[3]], "\n", " "),
		})
	}
	return out
}

// Invocation is a netreconcile command line found in a text: the words
// after "netreconcile", up to the end of the command (a pipe, a comment,
// the end of the line or of an argv list).
type Invocation struct {
	Words []string
	// Text is what the words were read from, for messages.
	Text string
}

// Invocations finds the netreconcile command lines of a shell text, a
// code span or an argv list ([netreconcile, apply, --probe, ssh]).
func Invocations(text string) []Invocation {
	var out []Invocation
	const word = "netreconcile"
	for i := 0; ; {
		j := strings.Index(text[i:], word)
		if j < 0 {
			return out
		}
		start, end := i+j, i+j+len(word)
		i = end
		var prev byte = ' '
		if start > 0 {
			prev = text[start-1]
		}
		if !strings.ContainsRune(" \t\n[(\"'`", rune(prev)) {
			continue
		}
		if end < len(text) && !strings.ContainsRune(" \t,", rune(text[end])) {
			continue // netreconcile.yaml, netreconcile: <alias>, netreconcile-rollback
		}
		rest := text[end:]
		if prev == '[' {
			if k := strings.IndexByte(rest, ']'); k >= 0 {
				rest = rest[:k]
			}
		} else {
			rest, _, _ = strings.Cut(rest, "\n")
			for _, stop := range []string{" | ", " || ", " && ", " # ", ";", ")", "`", " > ", " >", " <"} {
				rest, _, _ = strings.Cut(rest, stop)
			}
		}
		var words []string
		for _, w := range strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\t' || r == ',' || r == '\n' }) {
			w = strings.Trim(w, `"'[]`)
			if w != "" {
				words = append(words, w)
			}
		}
		if len(words) > 0 && strings.HasSuffix(words[0], ":") {
			// "netreconcile apply: …": a message as the command prints
			// it on standard error, quoted as output, not run.
			continue
		}
		if len(words) > 0 {
			out = append(out, Invocation{Words: words, Text: strings.TrimSpace(word + rest)})
		}
	}
}
