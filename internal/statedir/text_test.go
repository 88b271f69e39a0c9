package statedir

import (
	"os"
	"path/filepath"
	"runtime"
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

// A state file larger than its reader's bound is refused by its size
// before it is read: a sparse 1 GiB file, which costs its writer nothing,
// costs the reader nothing either.
func TestReadFileRefusesBySize(t *testing.T) {
	d, err := Open(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := os.Create(filepath.Join(d.Path(), "big"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := d.ReadFile("big", 256<<20); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a 1 GiB file with a 256 MiB bound: %v", err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing it allocated %d bytes", grew)
	}
}
