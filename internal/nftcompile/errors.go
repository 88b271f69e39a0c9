package nftcompile

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// nftError is one error nft printed: where in the script (line 0: nowhere
// said) and its message.
type nftError struct {
	Line, Col, EndCol int
	Msg               string
}

// maxErrorLines bounds what is read of nft's standard error: a script of
// thousands of rules that all fail prints three lines each.
const maxErrorLines = 100000

// parseErrors reads nft's standard error. An error is a line
// "NAME:LINE:COL-ENDCOL: Error: MESSAGE" followed by the script's line and
// a line of carets, which are skipped; a line "Error: MESSAGE" is an error
// nft could not place. Anything else is kept as an unplaced message only
// when no error was found at all.
func parseErrors(stderr string) []nftError {
	var out []nftError
	var other []string
	lines := strings.Split(stderr, "\n")
	if len(lines) > maxErrorLines {
		lines = lines[:maxErrorLines]
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], "\r")
		if e, ok := placedError(l); ok {
			out = append(out, e)
			// The script's line and the carets under it.
			if i+2 < len(lines) && isMarks(lines[i+2]) {
				i += 2
			}
			continue
		}
		if _, msg, ok := strings.Cut(l, "Error: "); ok {
			out = append(out, nftError{Msg: msg})
			continue
		}
		if strings.TrimSpace(l) != "" && !isMarks(l) {
			other = append(other, strings.TrimSpace(l))
		}
	}
	if len(out) == 0 && len(other) > 0 {
		out = append(out, nftError{Msg: strings.Join(other, "; ")})
	}
	return out
}

// placedError parses "NAME:LINE:COL-ENDCOL: Error: MESSAGE". NAME may hold
// colons; the position is the last "L:C-E: " before "Error: ".
func placedError(l string) (nftError, bool) {
	i := strings.Index(l, ": Error: ")
	if i < 0 {
		return nftError{}, false
	}
	head, msg := l[:i], l[i+len(": Error: "):]
	// head ends with ":LINE:COL-END" or ":LINE:COL-LINE2:COL2".
	parts := strings.Split(head, ":")
	if len(parts) < 3 {
		return nftError{}, false
	}
	var line, col, end int
	var err error
	tail := parts[len(parts)-2:]
	if strings.Contains(tail[1], "-") {
		// NAME:LINE:COL-END
		if line, err = strconv.Atoi(tail[0]); err != nil {
			return nftError{}, false
		}
		c, e, _ := strings.Cut(tail[1], "-")
		if col, err = strconv.Atoi(c); err != nil {
			return nftError{}, false
		}
		end, _ = strconv.Atoi(e)
	} else {
		// NAME:LINE:COL-LINE2:COL2 (a location over several lines)
		if len(parts) < 4 {
			return nftError{}, false
		}
		first := parts[len(parts)-3:]
		if line, err = strconv.Atoi(first[0]); err != nil {
			return nftError{}, false
		}
		c, _, _ := strings.Cut(first[1], "-")
		if col, err = strconv.Atoi(c); err != nil {
			return nftError{}, false
		}
	}
	if line <= 0 || col <= 0 {
		return nftError{}, false
	}
	return nftError{Line: line, Col: col, EndCol: end, Msg: msg}, true
}

// isMarks reports whether a line is nft's marks under a location: carets
// and tildes, with spaces.
func isMarks(l string) bool {
	l = strings.TrimSpace(l)
	return l != "" && strings.Trim(l, "^~ ") == ""
}

// Error is one refusal, placed in the file.
type Error struct {
	Pos  string // file:line:col
	Path string // the field's path
	Msg  string
}

func (e Error) Error() string {
	if e.Path == "" {
		return e.Pos + ": " + e.Msg
	}
	return e.Pos + ": " + e.Path + ": " + e.Msg
}

// Errors are nft's refusals of a configuration's rules and declarations,
// in the file's order.
type Errors []Error

func (es Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%d error", len(es))
	if len(es) != 1 {
		b.WriteString("s")
	}
	b.WriteString(", found by nft):")
	for i, e := range es {
		if i == 100 {
			fmt.Fprintf(&b, "\n  … and %d more", len(es)-i)
			break
		}
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// sortErrors orders errors by file, line and column.
func sortErrors(es Errors) {
	sort.SliceStable(es, func(i, j int) bool {
		fi, li, ci := es[i].Place()
		fj, lj, cj := es[j].Place()
		if fi != fj {
			return fi < fj
		}
		if li != lj {
			return li < lj
		}
		return ci < cj
	})
}

// Place splits the error's position into file, line and column (0, 0 when
// it has none).
func (e Error) Place() (file string, line, col int) {
	parts := strings.Split(e.Pos, ":")
	if len(parts) < 3 {
		return e.Pos, 0, 0
	}
	l, err1 := strconv.Atoi(parts[len(parts)-2])
	c, err2 := strconv.Atoi(parts[len(parts)-1])
	if err1 != nil || err2 != nil {
		return e.Pos, 0, 0
	}
	return strings.Join(parts[:len(parts)-2], ":"), l, c
}

// maskSecrets keeps a key typed where nft's words go out of nft's
// messages: nft quotes what it refuses, often only part of a word (it
// splits "k+ey=" at the '+', drops the padding), which the redaction of
// the message alone does not recognise as a key. Every stretch of a
// message of minSecretPiece or more characters that is also a stretch of
// a word of the file's text that redact.String judges a key is masked,
// separators included: what is left of the key in a message is pieces
// shorter than that, between placeholders.
func maskSecrets(errs Errors, texts []string) {
	var words []string
	for _, t := range texts {
		for _, w := range strings.FieldsFunc(t, func(r rune) bool { return r == ' ' || r == '\t' || r == '"' || r == ';' }) {
			if redact.String(w) != w {
				words = append(words, w)
			}
		}
	}
	if len(words) == 0 {
		return
	}
	for i := range errs {
		errs[i].Msg = maskStretches(errs[i].Msg, words)
	}
}

// minSecretPiece is the shortest stretch of a key maskSecrets masks: one
// shorter is as likely in any word of nft's messages.
const minSecretPiece = 8

// maskStretches replaces in msg, left to right, the longest stretch at
// each place that also occurs in one of words, where it is minSecretPiece
// characters or more.
func maskStretches(msg string, words []string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(msg); {
		n := 0
		for _, w := range words {
			for j := 0; j < len(w); j++ {
				k := 0
				for i+k < len(msg) && j+k < len(w) && msg[i+k] == w[j+k] {
					k++
				}
				n = max(n, k)
			}
		}
		if n < minSecretPiece {
			i++
			continue
		}
		b.WriteString(msg[last:i])
		b.WriteString(redact.Placeholder)
		i += n
		last = i
	}
	if last == 0 {
		return msg
	}
	b.WriteString(msg[last:])
	return b.String()
}

// enoent ends nft's message for the kernel's ENOENT: for a rule, or a
// verdict map's element, whose jump or goto names a chain its table lacks,
// nft 1.0.6 says no more than this, at the start of the rule.
const enoent = "No such file or directory"

// undeclaredJump finds, in a rule's (or an element's) text that the kernel
// refused with ENOENT, the first chain a jump or goto names that the table
// does not declare: its offset in the text and its name. Other causes of
// ENOENT keep nft's message as it is.
func undeclaredJump(t *model.NftTable, text, msg string) (int, string, bool) {
	if !strings.HasSuffix(msg, enoent) {
		return 0, "", false
	}
	off := 0
	prev := ""
	for f := range strings.FieldsSeq(text) {
		at := off + strings.Index(text[off:], f)
		off = at + len(f)
		if prev == "jump" || prev == "goto" {
			name := strings.TrimRight(f, ",;}")
			if q := strings.Trim(name, `"`); q != name {
				name, at = q, at+1
			}
			if name != "" && t.Chain(name) == nil {
				return at, name, true
			}
		}
		prev = f
	}
	return 0, "", false
}

// undeclaredJumpMsg says what to change for a jump to a chain the table
// does not declare.
func undeclaredJumpMsg(t *model.NftTable, name string) string {
	return fmt.Sprintf("chain %q is not declared in table %s (jump and goto go to a chain of the same table: declare it under chains)", name, t.Key())
}
