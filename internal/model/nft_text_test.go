package model

import (
	"strings"
	"testing"
)

// A rule is one line of nft: nothing after a comment may start another
// command in the script the compile child runs. A line break after "#"
// passed the check, and "counter # x\nflush chain …\nadd rule … drop"
// rewrote another table's chain, invisibly to diff; "include" after it
// read files as the compile child (adversarial review of the final tree).
func TestNftTextProblemCommentHidesNothing(t *testing.T) {
	for _, text := range []string{
		"counter # harmless counter\nflush chain inet nrc0 input\nadd rule inet nrc0 input drop",
		"tcp dport 22 accept # x\ninclude \"/etc/shadow\"",
		"tcp dport 22 accept # x\rinclude \"/dev/zero\"",
		"accept #\x00",
	} {
		for name, problem := range map[string]func(string) (int, string){"rule": NftTextProblem, "declaration": NftDeclProblem} {
			at, why := problem(text)
			if why == "" {
				t.Errorf("%s %q: accepted", name, text)
				continue
			}
			if !strings.Contains(why, "control character") || at <= strings.Index(text, "#") {
				t.Errorf("%s %q: %d %q, want the control character after the comment", name, text, at, why)
			}
		}
	}
	// A comment on one line is still a comment: what nft would ignore is
	// not judged.
	for _, text := range []string{"tcp dport 22 accept # ssh; {include", `accept # "`} {
		if at, why := NftTextProblem(text); why != "" {
			t.Errorf("%q: refused at %d: %s", text, at, why)
		}
	}
}
