package nftcompile

import (
	"strings"
	"testing"
)

// FuzzParseListing: nft's listing is read by show; whatever it prints
// (another nft's, a damaged one), the reader neither panics nor returns a
// rule that still carries a handle mark.
func FuzzParseListing(f *testing.F) {
	f.Add(listing)
	f.Add("table inet fw {\n\tchain c {\n\t\taccept # handle\n\t}\n")
	f.Add("table inet fw {\n\tset s {\n\t\telements = { \"a\", {\n")
	f.Fuzz(func(t *testing.T, out string) {
		l := ParseListing(out, "inet", "fw")
		for _, rs := range l.Rules {
			for h, text := range rs {
				if h == 0 || text == "" || strings.HasSuffix(text, "# handle") {
					t.Errorf("rule %d: %q", h, text)
				}
			}
		}
		for _, s := range l.Sets {
			for _, e := range s.Elements {
				if strings.TrimSpace(e) == "" {
					t.Errorf("an empty element of %q", out)
				}
			}
		}
	})
}

// FuzzParseErrors: nft's standard error is read after every failed run;
// whatever it says, the reader neither panics nor places an error before
// the script's first line.
func FuzzParseErrors(f *testing.F) {
	f.Add("/dev/stdin:9:34-34: Error: syntax error, unexpected newline\nadd rule inet t c x\n  ^\n")
	f.Add("/dev/stdin:2:1-3:4: Error: x\nError: Could not process rule: y\n")
	f.Add("a:b:c: Error: \n")
	f.Fuzz(func(t *testing.T, stderr string) {
		for _, e := range parseErrors(stderr) {
			if e.Line < 0 || e.Line > 0 && e.Col <= 0 {
				t.Errorf("error placed at %d:%d: %q", e.Line, e.Col, stderr)
			}
		}
	})
}
