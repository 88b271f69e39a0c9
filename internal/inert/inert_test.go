package inert

import (
	"bytes"
	"errors"
	"log/slog"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"eth0", "eth0"},
		{"", ""},
		{"\x1b]0;pwned\a", `\x1b]0;pwned\a`},
		{"a\r\nb\tc", `a\r\nb\tc`},
		{"del\x7f", `del\x7f`},
		{"c1\u009b31m", `c1\u009b31m`},
		{"rtl\u202egnp.exe", `rtl\u202egnp.exe`},
		{"ls\u2028x", `ls\u2028x`},
		{"bad\xff\xfe", `bad\xff\xfe`},
		{"cut\xe2\x82", `cut\xe2\x82`},
		{"ünïcødé ✓ 名前", "ünïcødé ✓ 名前"},
		{`back\slash`, `back\slash`},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := Text("line 1\n\tline 2\r\x1b[2J\n"); got != "line 1\n\tline 2\\r\\x1b[2J\n" {
		t.Errorf("Text: %q", got)
	}
}

// raw reports the first character of s that a terminal would act on.
func raw(s string, keepLines bool) (rune, bool) {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return r, true
			}
		}
		if keepLines && (r == '\n' || r == '\t') {
			continue
		}
		if r < 0x20 || r == 0x7f || unsafeRune(r) {
			return r, true
		}
	}
	return 0, false
}

// randomText mixes what an attacker would write with ordinary text.
func randomText(r *rand.Rand) string {
	parts := []string{"\x1b[31m", "\x1b]0;t\a", "\r", "\n", "\t", "\x00", "\x7f", "\u009b", "\u202e", "\u2029",
		"\xff", "\xe2\x82", "'", `"`, "$(id)", "`id`", ";", "|", "&", "*", "\\", " ", "~", "a", "Z", "9", "-", "é", "名"}
	var b strings.Builder
	for n := r.IntN(12); n >= 0; n-- {
		b.WriteString(parts[r.IntN(len(parts))])
	}
	return b.String()
}

func TestNothingRawComesOut(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := randomText(r)
		if c, bad := raw(String(s), false); bad {
			t.Fatalf("String(%q) = %q keeps %U", s, String(s), c)
		}
		if c, bad := raw(Text(s), true); bad {
			t.Fatalf("Text(%q) = %q keeps %U", s, Text(s), c)
		}
		if c, bad := raw(Quote(s), false); bad {
			t.Fatalf("Quote(%q) = %q keeps %U", s, Quote(s), c)
		}
		if Safe(s) != (String(s) == s) {
			t.Fatalf("Safe(%q) = %v, String gives %q", s, Safe(s), String(s))
		}
	}
}

// What Quote prints reads back in bash as the same word, and runs nothing.
func TestQuoteReadsBackInBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	r := rand.New(rand.NewPCG(3, 4))
	var words []string
	for range 300 {
		w := strings.ReplaceAll(randomText(r), "\x00", "") // argv cannot hold NUL
		words = append(words, w)
	}
	words = append(words, "", "plain", "it's", "$'x'", "a b", "-n")
	script := "printf '%s\\0' " + Command(words...)
	out, err := exec.Command(bash, "-c", script).Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	if len(got) != len(words) {
		t.Fatalf("bash read %d words, want %d", len(got), len(words))
	}
	for i := range words {
		if got[i] != words[i] {
			t.Errorf("word %d: printed %s, bash read %q, want %q", i, Quote(words[i]), got[i], words[i])
		}
	}
}

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"lab", "lab"},
		{"/var/lib/netreconcile", "/var/lib/netreconcile"},
		{"20261124T011853Z-ea5fde", "20261124T011853Z-ea5fde"},
		{"a b", "'a b'"},
		{"it's", `'it'\''s'`},
		{"x;rm -rf /", "'x;rm -rf /'"},
		{"\x1b[31m'", `$'\x1b[31m\''`},
		{`a\b` + "\n", `$'a\\b\n'`},
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer(&b)
	if n, err := w.Write([]byte("ok\n")); n != 3 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	if n, err := w.Write([]byte("link \x1b[2Jx\r\n")); n != 12 || err != nil {
		t.Fatalf("write: %d %v", n, err)
	}
	if b.String() != "ok\nlink \\x1b[2Jx\\r\n" {
		t.Errorf("%q", b.String())
	}
}

type name string

type stringer struct{}

func (stringer) String() string { return "s\x1b" }

func TestReplaceAttr(t *testing.T) {
	for _, h := range []func(*bytes.Buffer) slog.Handler{
		func(b *bytes.Buffer) slog.Handler {
			return slog.NewTextHandler(b, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr})
		},
		func(b *bytes.Buffer) slog.Handler {
			return slog.NewJSONHandler(b, &slog.HandlerOptions{ReplaceAttr: ReplaceAttr})
		},
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("msg\u009b", "id", "l\u202eink", "kind", name("n\x7f"), "error", errors.New("e\u009b"), "s", stringer{}, "n", 3)
		out := b.String()
		if c, bad := raw(strings.TrimSuffix(out, "\n"), false); bad {
			t.Errorf("raw %U in %q", c, out)
		}
		for _, want := range []string{`msg\\u009b`, `l\\u202eink`, `n\\x7f`, `e\\u009b`, `s\\x1b`} {
			if !strings.Contains(out, want) && !strings.Contains(out, strings.ReplaceAll(want, `\\`, `\`)) {
				t.Errorf("%s missing from %s", want, out)
			}
		}
	}
}
