package statedir

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"
)

// What a state file holds is input from whoever owns the state directory:
// the packaged service's user, when root runs a command there. Every string
// a reader takes from one is checked here when the file is loaded, before
// anything is used: a file that fails is refused whole, with a message that
// names the field and quotes none of the value (it may hold terminal escape
// sequences meant for root's terminal).

// CheckText checks a free text of at most max bytes: valid UTF-8 without
// control characters (C0, DEL, C1), but for newlines and tabs when
// multiline. field names it in the error.
func CheckText(field, s string, max int, multiline bool) error {
	if len(s) > max {
		return fmt.Errorf("%s: longer than %d bytes", field, max)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s: not valid UTF-8", field)
	}
	for _, r := range s {
		if multiline && (r == '\n' || r == '\t') {
			continue
		}
		if unicode.IsControl(r) {
			return fmt.Errorf("%s: holds a control character", field)
		}
	}
	return nil
}

// CheckToken checks a name of 1 to max bytes made only of ASCII letters,
// digits and the characters of extra, not starting with '-' (so that it is
// never taken for an option where a command line passes it on).
func CheckToken(field, s string, max int, extra string) error {
	if s == "" {
		return fmt.Errorf("%s: empty", field)
	}
	if len(s) > max {
		return fmt.Errorf("%s: longer than %d bytes", field, max)
	}
	if s[0] == '-' {
		return fmt.Errorf("%s: starts with '-'", field)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0 {
			continue
		}
		return fmt.Errorf("%s: holds a character other than letters, digits and %q", field, extra)
	}
	return nil
}

// CheckPath checks an absolute, clean path of at most 4096 bytes (PATH_MAX)
// without control characters.
func CheckPath(field, p string) error {
	if err := CheckText(field, p, 4096, false); err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return fmt.Errorf("%s: not an absolute, clean path", field)
	}
	return nil
}

// CleanText is s as CheckText accepts it, cut to max bytes: invalid UTF-8
// and control characters replaced by U+FFFD; newlines, unless multiline,
// by "; " and tabs by a space. For a text a writer takes from elsewhere
// (an error that quotes a kernel object's name) before it records it, so
// that its own file is never refused; a one-line text (an error shown in
// a message) cannot then forge lines of a terminal's output either.
func CleanText(s string, max int, multiline bool) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if !multiline {
		s = strings.NewReplacer("\r\n", "; ", "\n", "; ", "\t", " ").Replace(s)
	}
	s = strings.Map(func(r rune) rune {
		if multiline && (r == '\n' || r == '\t') {
			return r
		}
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	if len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
