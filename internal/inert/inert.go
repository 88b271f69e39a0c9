// Package inert keeps what netreconcile prints from acting on the terminal
// or the log that shows it. Names and values that come from a file, the
// state directory or the kernel (a link's name or alias, an nftables name,
// a transaction id written by the service user) may hold escape sequences
// that retitle a terminal, move its cursor or rewrite what is on screen,
// a carriage return that hides the start of a line, or a newline that
// forges one. Every such string passes through this package on its way
// out: String for a value inside a line, Writer for a whole stream (what
// the command line prints goes through one), Command for a command line the
// user is told to run, and ReplaceAttr for the daemon's log.
//
// Escapes are written as Go and C write them (\n, \x1b, \u202e), so that
// the escaped text says which character it was. A backslash already in the
// text is left alone: the escaping makes text inert, it does not make it
// reversible.
package inert

import (
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"unicode/utf8"
)

// String returns s with every character that acts on a terminal or breaks
// a line escaped: the C0 controls (newline and tab included), DEL, the C1
// controls (U+0080 to U+009F: U+009B is a CSI on some terminals), the
// bidirectional overrides and isolates that reorder what is shown (U+202A
// to U+202E, U+2066 to U+2069, U+200E, U+200F, U+061C), the line and
// paragraph separators, and every byte that is not part of valid UTF-8. A
// string with none of them is returned as it is, without copying.
func String(s string) string { return escape(s, false) }

// Text is String for a whole message of several lines: newlines and tabs
// are kept.
func Text(s string) string { return escape(s, true) }

// Safe reports whether String would return s unchanged.
func Safe(s string) bool { return clean(s, false) < 0 }

// clean returns the index of the first byte of s to escape, or -1.
func clean(s string, keepLines bool) int {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				if !keepLines || (c != '\n' && c != '\t') {
					return i
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || unsafeRune(r) {
			return i
		}
		i += n
	}
	return -1
}

// unsafeRune reports the characters above ASCII that String escapes.
func unsafeRune(r rune) bool {
	switch {
	case r >= 0x80 && r <= 0x9f: // C1 controls
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c: // bidi
		return true
	case r == 0x2028 || r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}

func escape(s string, keepLines bool) string {
	first := clean(s, keepLines)
	if first < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:first])
	for i := first; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			if c >= 0x20 && c != 0x7f || keepLines && (c == '\n' || c == '\t') {
				b.WriteByte(c)
				continue
			}
			switch c {
			case '\a':
				b.WriteString(`\a`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\v':
				b.WriteString(`\v`)
			default:
				fmt.Fprintf(&b, `\x%02x`, c)
			}
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, c)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Writer returns a writer that passes each write through Text before
// writing it to w: for streams of messages and reports, each written by
// one call (fmt.Fprintf, a table's flush, a log handler's record). A
// character that a write cuts in two is escaped as the invalid bytes it
// is then: the writer keeps nothing between writes.
func Writer(w io.Writer) io.Writer { return &writer{w} }

type writer struct{ w io.Writer }

func (w *writer) Write(p []byte) (int, error) {
	s := string(p)
	if clean(s, true) < 0 {
		if _, err := w.w.Write(p); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	if _, err := io.WriteString(w.w, Text(s)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Quote returns s as one word for a POSIX shell (sh, bash, zsh): as it is
// when it holds only characters no shell treats specially, else in single
// quotes. A word holding a character String escapes is written in ANSI-C
// quotes ($'...', which bash, zsh, ksh and busybox sh read) with the same
// escapes, so that the line printed is inert and still pastes back into
// the shell as the same word.
func Quote(s string) string {
	if s == "" {
		return "''"
	}
	plain := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("@%+=:,./_-", c) >= 0) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	if Safe(s) {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	var b strings.Builder
	b.WriteString("$'")
	for _, part := range strings.SplitAfter(s, "") {
		switch part {
		case `\`:
			b.WriteString(`\\`)
		case `'`:
			b.WriteString(`\'`)
		default:
			b.WriteString(String(part))
		}
	}
	b.WriteString("'")
	return b.String()
}

// Command returns a command line for the user to run: each word quoted
// (Quote), joined by spaces.
func Command(words ...string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = Quote(w)
	}
	return strings.Join(q, " ")
}

// ReplaceAttr is a slog.HandlerOptions.ReplaceAttr that makes every string
// a log record holds inert: the message, string values, errors, values of
// a string type and values that print themselves (fmt.Stringer). slog's
// text handler quotes such values, but its JSON handler leaves DEL, the C1
// controls and the bidirectional overrides raw. A value with nothing to
// escape is left as it was; other kinds (numbers, times, durations) cannot
// hold any.
func ReplaceAttr(_ []string, a slog.Attr) slog.Attr {
	v := a.Value
	var s string
	switch v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			s = x.Error()
		case fmt.Stringer:
			s = x.String()
		default:
			rv := reflect.ValueOf(x)
			if !rv.IsValid() || rv.Kind() != reflect.String {
				return a
			}
			s = rv.String()
		}
	default:
		return a
	}
	if !Safe(s) {
		a.Value = slog.StringValue(String(s))
	}
	return a
}
