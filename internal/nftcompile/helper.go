package nftcompile

import "github.com/netreconcile/netreconcile/internal/nftwire"

// helperIn is what the parent sends the child, as JSON on its standard
// input.
type helperIn struct {
	Nft string
	// Scripts are run in turn, each by nft -f: one transaction each.
	Scripts []string
	// Checks are run each by nft -c -f, before Scripts and apart from
	// them: a script each, a nft each, judged alone.
	Checks []string
	Tables []helperTable
	// Links are made in the namespace before nft runs, with the names and
	// indexes they have where the rules go: `iif "eth0"` compiles to
	// eth0's index, which nft looks up in its own namespace.
	Links []helperLink
}

type helperTable struct{ Family, Name string }

type helperLink struct {
	Name  string
	Index int
}

// helperOut is the child's answer, as JSON on its standard output.
type helperOut struct {
	// Error is the child's own failure (it could not run nft, or dump).
	Error string
	// Refused says nft exited with a failure on script Failed; Stderr
	// is what it said.
	Refused bool
	Failed  int
	Stderr  string
	// Checked is what nft said of each of Checks: "" when it took it.
	Checked []string
	Dumps   []*nftwire.TableDump
}
