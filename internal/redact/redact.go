// Package redact keeps secrets out of messages. An error may quote what a
// user typed, and errors reach the terminal, the journal and the daemon's
// STATUS= line, which every local user can read: a private key typed into
// the wrong field (listen-port:, fwmark:, a file name with a trailing
// space) would be printed there. Every message netreconcile prints passes
// through String, which replaces whatever looks like a key.
package redact

import (
	"io"
	"sort"
	"strings"
	"sync"
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
// /etc/netreconcile/keys has no upper case), and one of two marks of
// randomness that names lack. Names are words: every upper case letter
// starts one and its lower case letters run on (TestLoadReadsDropIns,
// F9_posless_error), with digits in one or two groups (Go's test
// directories end in one). Random base64 has an upper case letter followed
// by something else than lower case, or digits in three groups or more,
// or, failing both, short lower case runs (a lower case letter is followed
// by another with probability 26/64, so they average under two). Measured
// over 5 million random keys, the first two marks missed one key in about
// 800,000; with the third, one in 5 million.
func mixed(s string) bool {
	var upper, lower bool
	odd, digitChanges := 0, 0
	runs, runLen, cur := 0, 0, 0
	var prev byte
	for i := 0; i <= len(s); i++ {
		var c byte
		if i < len(s) {
			c = s[i]
		}
		isUpper, isLower, isDigit := c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9'
		if isLower {
			cur++
		} else if cur > 0 {
			runs, runLen, cur = runs+1, runLen+cur, 0
		}
		if !isUpper && !isLower && !isDigit {
			continue
		}
		upper, lower = upper || isUpper, lower || isLower
		if prev != 0 {
			if prev >= 'A' && prev <= 'Z' && !isLower {
				odd++
			}
			if (prev >= '0' && prev <= '9') != isDigit {
				digitChanges++
			}
		}
		prev = c
	}
	shortRuns := runs >= 4 && 2*runLen < 5*runs // mean run under 2.5
	return upper && lower && (odd > 0 || digitChanges > 2 || shortRuns)
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
	// Unpadded (not how wg genkey writes a key, but a user may trim it): a
	// run, or a part of a path between slashes, of a key's length give or
	// take a few characters typed around it. An unpadded key holding a
	// slash, glued to a path, is not recognised: telling it from a path
	// would hide ordinary paths too.
	cand := func(c string) bool { return len(c) >= b64Len && len(c) <= b64Len+5 && mixed(c) }
	if cand(run) && !pathLike(run) {
		return true
	}
	for _, seg := range strings.Split(run, "/") {
		if cand(seg) {
			return true
		}
	}
	return false
}

// pathLike reports whether run holds a part between slashes that reads as
// a name: letters then six or more digits, 12 or more in all, as Go names test directories
// (TestIPAMValidationErrors2845671234). In a random key such a part is
// vanishingly rare: after the first digit every character must be one.
func pathLike(run string) bool {
	if !strings.Contains(run, "/") {
		return false
	}
	for _, seg := range strings.Split(run, "/") {
		if len(seg) < 12 {
			continue
		}
		i := 0
		for i < len(seg) && (seg[i] >= 'A' && seg[i] <= 'Z' || seg[i] >= 'a' && seg[i] <= 'z') {
			i++
		}
		j := i
		for j < len(seg) && seg[j] >= '0' && seg[j] <= '9' {
			j++
		}
		if j == len(seg) && i >= 4 && j-i >= 6 {
			return true
		}
	}
	return false
}

// Names this program prints itself are never judged: the paths of the
// configuration files it reads (desired.ReadFile, the drop-in directory)
// and of its state directory. The user chose them and sees them in every
// message; judged as values, a path such as
// /srv/netconfig/hidden/loader/F9_posless_error.yaml (45 characters of
// base64's alphabet, upper and lower case, a digit) was taken for a key,
// and every error lost its file name. Values (what a field holds, a key
// file's path typed into one) are still judged wherever they sit, even
// inside a message that names a file: a name protects only its own
// characters, bounded by what cannot continue a key.
var own struct {
	sync.RWMutex
	names map[string]bool
}

// maxOwn bounds the names kept: a configuration with that many drop-ins
// is past what a message needs to name.
const maxOwn = 4096

// Own records names (paths) this program prints itself, so that String
// leaves them whole.
func Own(names ...string) {
	own.Lock()
	defer own.Unlock()
	if own.names == nil {
		own.names = map[string]bool{}
	}
	for _, n := range names {
		if n != "" && len(own.names) < maxOwn {
			own.names[n] = true
		}
	}
}

// owned returns the ranges of s that are names recorded by Own, sorted and
// disjoint. A name counts only where it stands alone: not preceded by a
// character that could continue a key, and not followed by one but for '/'
// (a path under it, whose rest is judged as it is).
func owned(s string) [][2]int {
	own.RLock()
	defer own.RUnlock()
	var out [][2]int
	for n := range own.names {
		for from := 0; from < len(s); {
			i := strings.Index(s[from:], n)
			if i < 0 {
				break
			}
			a, b := from+i, from+i+len(n)
			from = a + 1
			if a > 0 && isB64(s[a-1]) || b < len(s) && isB64(s[b]) && s[b] != '/' {
				continue
			}
			out = append(out, [2]int{a, b})
		}
	}
	if len(out) < 2 {
		return out
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] || out[i][0] == out[j][0] && out[i][1] > out[j][1] })
	merged := out[:1]
	for _, r := range out[1:] {
		if last := &merged[len(merged)-1]; r[0] < last[1] {
			last[1] = max(last[1], r[1])
		} else {
			merged = append(merged, r)
		}
	}
	return merged
}

// String returns s with every run of base64 characters (with its '='
// padding) that looks like a key replaced by Placeholder; the names
// recorded by Own are left whole, and what surrounds them is judged
// apart.
func String(s string) string {
	var b strings.Builder
	last := 0
	skip := owned(s)
	for i := 0; i < len(s); {
		if len(skip) > 0 && i >= skip[0][0] {
			i = max(i, skip[0][1])
			skip = skip[1:]
			continue
		}
		if !isB64(s[i]) {
			i++
			continue
		}
		limit := len(s)
		if len(skip) > 0 {
			limit = skip[0][0]
		}
		j := i
		for j < limit && isB64(s[j]) {
			j++
		}
		end := j
		for end < limit && s[end] == '=' {
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
