package model

import "strconv"

// Origin is where the file declares an object: "file:line:col" once
// rendered. It keeps the file's name (shared by every object of the file)
// and the two numbers, not the text: a daemon holds each route's origin
// for as long as it enforces the file, and the text of 10k of them was
// about half a megabyte (a path of 40 characters and the numbers, a
// route). The zero Origin is none.
type Origin struct {
	file      *string // the file's name; the whole text when line is 0
	line, col uint32
}

// OriginAt is the position line:col of the file whose name file points to.
// Objects of one file share that pointer.
func OriginAt(file *string, line, col int) Origin {
	if file == nil {
		return Origin{}
	}
	return Origin{file: file, line: uint32(line), col: uint32(col)}
}

// OriginText is an origin that is not a position, as text: a pool's
// export route is declared by the pool's block ("pool p block 3").
func OriginText(s string) Origin {
	if s == "" {
		return Origin{}
	}
	return Origin{file: &s}
}

// String renders the origin as Pos.String does: "file:line:col", the text
// of an OriginText, "" for none.
func (o Origin) String() string {
	if o.file == nil {
		return ""
	}
	if o.line == 0 {
		return *o.file
	}
	b := make([]byte, 0, len(*o.file)+22)
	b = append(b, *o.file...)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(o.line), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(o.col), 10)
	return string(b)
}

// IsZero reports the zero Origin: none.
func (o Origin) IsZero() bool { return o.file == nil }

// Equal compares two origins by their text (go-cmp uses it): the same
// position of two copies of one file name is the same origin.
func (o Origin) Equal(p Origin) bool {
	if o.line != p.line || o.col != p.col || (o.file == nil) != (p.file == nil) {
		return false
	}
	return o.file == p.file || *o.file == *p.file
}
