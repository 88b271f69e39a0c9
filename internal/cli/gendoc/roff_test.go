package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// generate writes the pages into a temporary directory.
func generate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := run(dir, "", "1.0.0", "2026-11-29"); err != nil {
		t.Fatal(err)
	}
	return dir
}

func command(t *testing.T, name string, args ...string) (stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "MANWIDTH=80")
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, e.String())
	}
	return o.String(), e.String()
}

// TestPagesHaveNoRoffErrors: every page formats without a warning from
// groff (-ww: all of them) and from man --warnings as lintian runs it, and
// its NAME line is what lexgrog (whatis, apropos) reads.
func TestPagesHaveNoRoffErrors(t *testing.T) {
	for _, tool := range []string{"groff", "man", "lexgrog"} {
		nettest.RequireTool(t, tool)
	}
	dir := generate(t)
	pages := cli.HelpPages()
	files, _ := filepath.Glob(filepath.Join(dir, "*.8"))
	if len(files) != len(pages) || len(pages) < 10 {
		t.Fatalf("%d pages written for %d helps", len(files), len(pages))
	}
	for _, p := range pages {
		f := filepath.Join(dir, pageName(p.Command)+".8")
		if _, e := command(t, "groff", "-ww", "-z", "-man", "-Tutf8", f); e != "" {
			t.Errorf("groff -ww %s:\n%s", filepath.Base(f), e)
		}
		if _, e := command(t, "man", "--warnings", "-E", "UTF-8", "-l", "-Tutf8", "-Z", f); e != "" {
			t.Errorf("man --warnings %s:\n%s", filepath.Base(f), e)
		}
		out, _ := command(t, "lexgrog", f)
		want := f + `: "` + pageName(p.Command) + " - " + p.Summary + `"` + "\n"
		if out != want {
			t.Errorf("lexgrog: %q, want %q", out, want)
		}
	}
}

// TestPagesHoldTheHelp: what man shows of each page is the help text the
// binary prints, word for word and in order; the only other words are the
// page's title, NAME, the section names the conversion adds and SEE ALSO.
// The help is the oracle: a conversion that drops, reorders or mangles a
// word (an escape gone wrong, a line read as a request) fails here.
func TestPagesHoldTheHelp(t *testing.T) {
	nettest.RequireTool(t, "groff")
	dir := generate(t)
	pages := cli.HelpPages()
	for _, p := range pages {
		f := filepath.Join(dir, pageName(p.Command)+".8")
		// No hyphenation and long lines: a word is never split.
		out, e := command(t, "groff", "-man", "-Tutf8", "-rLL=1000n", "-P-cbou", f)
		if e != "" {
			t.Fatalf("groff %s: %s", f, e)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		// The header and footer lines.
		got := words(strings.Join(lines[1:len(lines)-1], "\n"))
		help := p.Text
		if p.Command == "" {
			_, help, _ = strings.Cut(help, "\n")
		}
		want := words(strings.Replace(help, "Usage:", "", 1))
		allowed := map[string]bool{"name": true, "synopsis": true, "description": true, "see": true, "also": true}
		for _, w := range words(pageName(p.Command) + " " + p.Summary) {
			allowed[w] = true
		}
		for _, q := range pages {
			allowed[words(pageName(q.Command) + "(8)")[0]] = true
			allowed[words(pageName(q.Command) + "(8),")[0]] = true
		}
		i := 0
		for wi, w := range want {
			for i < len(got) && got[i] != w {
				if !allowed[got[i]] {
					t.Fatalf("%s: %q (at word %d of the rendered page) is not the help's next word %q; help goes on: %s",
						filepath.Base(f), got[i], i, w, strings.Join(want[wi:min(wi+12, len(want))], " "))
				}
				i++
			}
			if i == len(got) {
				t.Fatalf("%s: the help's word %d, %q, is not on the page (help goes on: %s)",
					filepath.Base(f), wi, w, strings.Join(want[wi:min(wi+12, len(want))], " "))
			}
			i++
		}
		for ; i < len(got); i++ {
			if !allowed[got[i]] {
				t.Errorf("%s: %q after the help's last word", filepath.Base(f), got[i])
			}
		}
	}
}

// words splits text as it is compared: lower case (section names are in
// capitals), a heading's colon dropped, typographic hyphens and quotes as
// typed, and no bullets ("•" on the page, "-" in the help).
func words(s string) []string {
	s = strings.NewReplacer("‐", "-", "−", "-", "‘", "'", "’", "'", "“", `"`, "”", `"`, "•", "").Replace(s)
	var out []string
	for _, w := range strings.Fields(strings.ToLower(s)) {
		if w = strings.TrimSuffix(w, ":"); w != "" && w != "-" {
			out = append(out, w)
		}
	}
	return out
}

// TestEscape: what roff would read as a request or an escape is escaped.
func TestEscape(t *testing.T) {
	w := &roff{}
	w.text(`.not a request \n --flag ±`)
	w.text(`'neither`)
	want := `\&.not a request \en \-\-flag \[u00B1]` + "\n" + `\&'neither` + "\n"
	if w.String() != want {
		t.Errorf("got %q, want %q", w.String(), want)
	}
}
