package desired

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
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

// posArena makes Pos.String's text for positions by the hundred thousand
// (each route's and address's Origin) into shared buffers, one allocation
// per buffer instead of one or two per position. A strings.Builder never
// changes the bytes it has written, and a string it returned stays valid
// when it grows, so each text is a slice of the builder's string.
type posArena struct {
	b    strings.Builder
	size int // of the current buffer: they double up to 64 KiB
	// files are the names Origin points to, one per file.
	files map[string]*string
}

// Origin is the position as a model.Origin: the file's name is kept once,
// whatever the number of positions in it.
func (a *posArena) Origin(p Pos) model.Origin {
	f := a.files[p.File]
	if f == nil {
		if a.files == nil {
			a.files = map[string]*string{}
		}
		f = &p.File
		a.files[p.File] = f
	}
	return model.OriginAt(f, p.Line, p.Col)
}

func (a *posArena) String(p Pos) string {
	if p.Line == 0 {
		return p.File
	}
	need := len(p.File) + 2 + 2*20
	if a.b.Cap()-a.b.Len() < need {
		a.size = min(max(2*a.size, 1024), 64<<10)
		a.b = strings.Builder{}
		a.b.Grow(max(a.size, need))
	}
	start := a.b.Len()
	var num [20]byte
	a.b.WriteString(p.File)
	a.b.WriteByte(':')
	a.b.Write(strconv.AppendInt(num[:0], int64(p.Line), 10))
	a.b.WriteByte(':')
	a.b.Write(strconv.AppendInt(num[:0], int64(p.Col), 10))
	return a.b.String()[start:]
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

// Errors is the problems found in a configuration, sorted by position: all
// of them, or the first MaxKeptErrors by position when there are more
// (ErrorCount gives the number). It is returned as one error.
type Errors []*FieldError

// MaxPrintedErrors caps the errors Error prints: a generated file with a
// systematic mistake can have 100k of them, and a log line or terminal
// filled with the same message helps nobody. The count is always given.
const MaxPrintedErrors = 100

// MaxKeptErrors caps the errors kept in memory and formatted: a 1 MB file
// can hold half a million mistakes ("[x,x,x,…]"), and formatting and
// keeping every one took seconds and hundreds of megabytes. Beyond the cap
// errors are counted, and only those earlier in the file than the last
// kept one replace it.
const MaxKeptErrors = 10000

func (es Errors) Error() string { return errorsText(es, len(es)) }

func errorsText(es Errors, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid configuration (%s error", thousands(total))
	if total != 1 {
		b.WriteString("s")
	}
	b.WriteString("):")
	for i, e := range es {
		if i == MaxPrintedErrors {
			break
		}
		b.WriteString("\n  ")
		b.WriteString(e.Error())
	}
	if n := min(len(es), MaxPrintedErrors); total > n {
		fmt.Fprintf(&b, "\n  … and %s more", thousands(total-n))
	}
	return b.String()
}

// ErrorCount returns how many problems an error from Parse stands for:
// the length of its Errors, or more when only the first were kept.
func ErrorCount(err error) int {
	var c *countedErrors
	if errors.As(err, &c) {
		return c.total
	}
	var es Errors
	if errors.As(err, &es) {
		return len(es)
	}
	if err != nil {
		return 1
	}
	return 0
}

// RenameFile makes the problems err reports in the file named from (as
// Parse was given it) name the file to instead, in their positions and in
// the positions their messages quote: a --candidate is parsed under the
// main file's name, which its relative side files resolve against, and the
// user must be pointed at the candidate they wrote.
func RenameFile(err error, from, to string) {
	var es Errors
	if !errors.As(err, &es) {
		return
	}
	for _, e := range es {
		if e.Pos.File == from {
			e.Pos.File = to
		}
		e.Msg = strings.ReplaceAll(e.Msg, from+":", to+":")
	}
}

// countedErrors is the Errors kept and how many there were.
type countedErrors struct {
	kept  Errors
	total int
}

func (c *countedErrors) Error() string { return errorsText(c.kept, c.total) }

// Unwrap gives the kept Errors to errors.As.
func (c *countedErrors) Unwrap() error { return c.kept }

// thousands writes n with comma separators: "99,900".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// errList collects errors: every one is counted, the first MaxKeptErrors
// by position are kept, in a heap whose top is the last kept.
type errList struct {
	errs errHeap
	// at is the set of positions with an error, so that adding stays O(1).
	// Its key is a position packed in a word where it fits (a file's index,
	// not its name): a 1 MB file can hold half a million errors, and this
	// set was most of their time and memory. Positions that do not fit are
	// in wide.
	//
	// The packed positions are in asc while they arrive in increasing order
	// (most do: a section is checked in file order), where adding is an
	// append and not a hash insertion; the others are in at. Every key in
	// at is below asc's last, so a key above it is new.
	asc   []uint64
	at    map[uint64]struct{}
	wide  map[Pos]struct{}
	files map[string]uint64
	total int
	seq   int
	// max overrides MaxKeptErrors in tests.
	max int
}

type keptError struct {
	*FieldError
	seq int // the order of arrival, among errors at one position
}

func posBefore(p, q Pos) bool {
	if p.File != q.File {
		return p.File < q.File
	}
	if p.Line != q.Line {
		return p.Line < q.Line
	}
	return p.Col < q.Col
}

func errBefore(a, b keptError) bool {
	if a.Pos != b.Pos {
		return posBefore(a.Pos, b.Pos)
	}
	return a.seq < b.seq
}

// errHeap is a max-heap: the top is the kept error latest in the files.
type errHeap []keptError

func (h errHeap) Len() int           { return len(h) }
func (h errHeap) Less(i, j int) bool { return errBefore(h[j], h[i]) }
func (h errHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *errHeap) Push(x any)        { *h = append(*h, x.(keptError)) }
func (h *errHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// add records an error. Only the first error at a position is kept: a value
// that failed to parse would otherwise also fail every check of its meaning.
func (l *errList) add(p Pos, path, format string, args ...any) {
	if l.admit(p) {
		// Redacted here too, so that Msg is safe for callers that print it alone.
		l.keep(p, path, redact.String(fmt.Sprintf(format, args...)))
	}
}

// addLazy is add for the errors a file can hold by the hundred thousand
// (one per list item): text gives the path and the message, and is called
// only for an error that is kept, so that the errors past MaxKeptErrors
// cost a count and no formatting.
func (l *errList) addLazy(p Pos, text func() (path, msg string)) {
	if l.admit(p) {
		path, msg := text()
		l.keep(p, path, redact.String(msg))
	}
}

// admit counts an error at p and reports whether it is to be kept (then
// keep must follow): not when p already has one, nor when MaxKeptErrors
// are kept that all come before p.
func (l *errList) admit(p Pos) bool {
	if p.Line != 0 && !l.mark(p) {
		return false
	}
	l.total++
	l.seq++
	if len(l.errs) < l.limit() {
		return true
	}
	// An error later than (or at) the last kept one is counted only: at
	// one position the earlier arrival stays.
	return posBefore(p, l.errs[0].Pos)
}

// keep keeps the error admit admitted last, replacing the last kept one
// when the list is full.
func (l *errList) keep(p Pos, path, msg string) {
	if len(l.errs) >= l.limit() {
		heap.Pop(&l.errs)
	}
	heap.Push(&l.errs, keptError{&FieldError{Pos: p, Path: path, Msg: msg}, l.seq})
}

func (l *errList) limit() int {
	if l.max == 0 {
		return MaxKeptErrors
	}
	return l.max
}

// mark adds p to the positions with an error and reports whether it was
// not there yet.
func (l *errList) mark(p Pos) bool {
	f, ok := l.files[p.File]
	if !ok {
		if l.files == nil {
			l.files = map[string]uint64{}
		}
		f = uint64(len(l.files))
		l.files[p.File] = f
	}
	if f >= 1<<16 || p.Line < 0 || p.Line >= 1<<24 || p.Col < 0 || p.Col >= 1<<24 {
		if l.wide == nil {
			l.wide = map[Pos]struct{}{}
		}
		n := len(l.wide)
		l.wide[p] = struct{}{}
		return len(l.wide) > n
	}
	k := f<<48 | uint64(p.Line)<<24 | uint64(p.Col)
	if len(l.asc) == 0 || k > l.asc[len(l.asc)-1] {
		l.asc = append(l.asc, k)
		return true
	}
	if _, found := slices.BinarySearch(l.asc, k); found {
		return false
	}
	if l.at == nil {
		l.at = map[uint64]struct{}{}
	}
	n := len(l.at)
	l.at[k] = struct{}{}
	return len(l.at) > n
}

// count is the number of errors so far.
func (l *errList) count() int { return l.total }

func (l *errList) err() error {
	if l.total == 0 {
		return nil
	}
	kept := make(Errors, len(l.errs))
	sort.Slice(l.errs, func(i, j int) bool { return errBefore(l.errs[i], l.errs[j]) })
	for i, e := range l.errs {
		kept[i] = e.FieldError
	}
	if l.total == len(kept) {
		return kept
	}
	return &countedErrors{kept, l.total}
}
