package statedir

import (
	"strings"
	"testing"
)

func TestCheckText(t *testing.T) {
	for _, tt := range []struct {
		s         string
		multiline bool
		ok        bool
	}{
		{"plain text, ünïcode", false, true},
		{"two\nlines\tand a tab", true, true},
		{"two\nlines", false, false},
		{"esc \x1b[2J", true, false},
		{"del \x7f", true, false},
		{"c1 \u009b", true, false},
		{"bad \xff", true, false},
	} {
		if err := CheckText("f", tt.s, 100, tt.multiline); (err == nil) != tt.ok {
			t.Errorf("CheckText(%q, %v): %v", tt.s, tt.multiline, err)
		}
	}
	if err := CheckText("f", strings.Repeat("x", 11), 10, false); err == nil {
		t.Error("11 bytes within 10")
	}
}

func TestCheckTokenAndPath(t *testing.T) {
	for s, ok := range map[string]bool{"20261124T011546Z-2e1077": true, "a": true, "": false, "-rf": false, "a b": false, "a/b": false, "a\x1b": false} {
		if err := CheckToken("id", s, 64, "-"); (err == nil) != ok {
			t.Errorf("CheckToken(%q): %v", s, err)
		}
	}
	for p, ok := range map[string]bool{"/etc/netreconcile/x.yaml": true, "/": true, "etc/x": false, "/etc/../x": false, "/etc//x": false, "/etc/x/": false, "/etc/\x1b": false} {
		if err := CheckPath("path", p); (err == nil) != ok {
			t.Errorf("CheckPath(%q): %v", p, err)
		}
	}
}

// What CleanText returns always passes CheckText.
func TestCleanText(t *testing.T) {
	for _, s := range []string{"a\x1b[2Jb\nc\td\xff\u009b", strings.Repeat("é", 100), "line\r\nline"} {
		for _, ml := range []bool{false, true} {
			c := CleanText(s, 51, ml)
			if err := CheckText("f", c, 51, ml); err != nil {
				t.Errorf("CleanText(%q, %v) = %q: %v", s, ml, c, err)
			}
		}
	}
	if got := CleanText("a\nb", 100, false); got != "a; b" {
		t.Errorf("one line: %q", got)
	}
}
