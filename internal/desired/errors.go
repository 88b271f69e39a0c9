package desired

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/redact"
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

// Error never quotes a value that looks like a key (package redact): the
// position's file name and the message may both hold what the user typed.
func (e *FieldError) Error() string {
	if e.Path == "" {
		return redact.String(fmt.Sprintf("%s: %s", e.Pos, e.Msg))
	}
	return redact.String(fmt.Sprintf("%s: %s: %s", e.Pos, e.Path, e.Msg))
}

// Errors is every problem found in a configuration; it is returned as one error.
type Errors []*FieldError

func (es Errors) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%d error", len(es))
	if len(es) != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for _, e := range es {
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	return b.String()
}

type errList struct{ errs Errors }

// add records an error. Only the first error at a position is kept: a value
// that failed to parse would otherwise also fail every check of its meaning.
func (l *errList) add(p Pos, path, format string, args ...any) {
	if p.Line != 0 {
		for _, e := range l.errs {
			if e.Pos == p {
				return
			}
		}
	}
	// Redacted here too, so that Msg is safe for callers that print it alone.
	l.errs = append(l.errs, &FieldError{Pos: p, Path: path, Msg: redact.String(fmt.Sprintf(format, args...))})
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
