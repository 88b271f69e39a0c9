// Package redact keeps secrets out of messages. An error may quote what a
// user typed, and errors reach the terminal, the journal and the daemon's
// STATUS= line, which every local user can read: a private key typed into
// the wrong field (listen-port:, fwmark:, a file name with a trailing
// space) would be printed there. Every message netreconcile prints passes
// through String, which replaces whatever looks like a key.
package redact

import (
	"io"
	"strings"
)

// Placeholder replaces a value that looks like a key.
const Placeholder = "[value hidden: it looks like a key]"

// A WireGuard key is 32 bytes: 44 characters of standard base64 ending in
// one '=' (wg genkey), 43 without the padding, or 64 hexadecimal digits
// (the UAPI form).
const (
	b64Len    = 43
	minPadded = 32 // a padded run this long is taken for a key cut short (24 bytes in base64)
	hexLen    = 64
)

func isB64(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// mixed reports whether s reads like random bytes in base64 rather than
// a word, a name or a path: upper and lower case letters (a path such as
// /etc/netreconcile/keys has no upper case), and either many changes
// between letter cases and digits or upper case letters not starting a
// word. A CamelCase name such as TestConcurrentApplies2787830375 has 12
// changes and no such letter; in 500,000 random keys, none had fewer than
// 13 changes and fewer than 3 such letters.
func mixed(s string) bool {
	var upper, lower bool
	changes, odd := 0, 0
	class := func(c byte) int {
		switch {
		case c >= 'A' && c <= 'Z':
			return 1
		case c >= 'a' && c <= 'z':
			return 2
		case c >= '0' && c <= '9':
			return 3
		}
		return 4
	}
	for i := 0; i < len(s); i++ {
		c := class(s[i])
		upper = upper || c == 1
		lower = lower || c == 2
		if i+1 < len(s) {
			n := class(s[i+1])
			if n != c {
				changes++
			}
			if c == 1 && n != 2 {
				odd++
			}
		}
	}
	return upper && lower && (changes >= 13 || odd >= 3)
}

func hexRun(s string) bool {
	n := 0
	for i := 0; i < len(s); i++ {
		if isHex(s[i]) {
			if n++; n >= hexLen {
				return true
			}
		} else {
			n = 0
		}
	}
	return false
}

// keyLike reports whether run (base64 characters, followed by pad '='
// characters in the message) holds something that looks like a key.
func keyLike(run string, pad int) bool {
	if hexRun(run) {
		return true
	}
	// Padding ends a key: the characters before it, even where a path
	// precedes the key in the same run ("/etc/KEY=").
	if pad > 0 && len(run) >= minPadded-1 && mixed(run[len(run)-min(len(run), b64Len):]) {
		return true
	}
	// Unpadded: a key's length (give or take a few characters typed
	// around it) of the run, between slashes or at either
	// end of a path ("/etc/netreconcile/KEY", where the key itself may
	// hold slashes).
	cand := func(c string) bool { return len(c) >= b64Len && len(c) <= b64Len+5 && mixed(c) }
	if cand(run) {
		return true
	}
	for i := 0; i < len(run); i++ {
		if run[i] == '/' && (cand(run[i+1:]) || cand(run[:i])) {
			return true
		}
	}
	for _, seg := range strings.Split(run, "/") {
		if cand(seg) {
			return true
		}
	}
	return false
}

// String returns s with every run of base64 characters (with its '='
// padding) that looks like a key replaced by Placeholder.
func String(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if !isB64(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isB64(s[j]) {
			j++
		}
		end := j
		for end < len(s) && s[end] == '=' {
			end++
		}
		if keyLike(s[i:j], end-j) {
			b.WriteString(s[last:i])
			b.WriteString(Placeholder)
			last = end
		}
		i = end
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// Error returns err with its message redacted; errors.Is and errors.As still
// see the original through Unwrap.
func Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if r := String(msg); r != msg {
		return &redacted{msg: r, err: err}
	}
	return err
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }
func (r *redacted) Unwrap() error { return r.err }

// Writer returns a writer that redacts each write before passing it to w:
// for streams of messages, each written by one call (fmt.Fprintf, a log
// handler's record).
func Writer(w io.Writer) io.Writer { return &writer{w} }

type writer struct{ w io.Writer }

func (w *writer) Write(p []byte) (int, error) {
	s := String(string(p))
	if _, err := io.WriteString(w.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}
