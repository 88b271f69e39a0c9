package desired

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Pos is a position in a configuration file.
type Pos struct {
	File      string
	Line, Col int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line) + ":" + strconv.Itoa(p.Col)
}

// FieldError is one problem in the file.
type FieldError struct {
	Pos  Pos
	Path string // e.g. links.br0.mtu
	Msg  string
}

func (e *FieldError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Pos, e.Path, e.Msg)
}

// Errors is every problem found in a configuration, sorted by position; it
// is returned as one error.
type Errors []*FieldError

// MaxPrintedErrors caps the errors Error prints: a generated file with a
// systematic mistake can have 100k of them, and a log line or terminal
// filled with the same message helps nobody. The count is always given.
const MaxPrintedErrors = 100

func (es Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%s error", thousands(len(es)))
	if len(es) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for i, e := range es {
		if i == MaxPrintedErrors {
			fmt.Fprintf(&b, "\n  … and %s more", thousands(len(es)-i))
			break
		}
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

// thousands writes n with comma separators: "99,900".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

type errList struct {
	errs Errors
	at   map[Pos]bool // positions with an error: a set, so that adding stays O(1)
}

// add records an error. Only the first error at a position is kept: a value
// that failed to parse would otherwise also fail every check of its meaning.
func (l *errList) add(p Pos, path, format string, args ...any) {
	if p.Line != 0 {
		if l.at[p] {
			return
		}
		if l.at == nil {
			l.at = map[Pos]bool{}
		}
		l.at[p] = true
	}
	l.errs = append(l.errs, &FieldError{Pos: p, Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	sort.SliceStable(l.errs, func(i, j int) bool {
		a, b := l.errs[i].Pos, l.errs[j].Pos
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Col < b.Col
	})
	return l.errs
}
