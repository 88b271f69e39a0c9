package nftcache_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nftcache"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// One-shot commands on a namespace, against the real kernel: apply leaves
// the elements it knows in the state directory; the next command takes
// them only while the ruleset generation has not moved, and only in the
// namespace and boot they were read in. The cache is shown to be taken by
// editing it (one element less): while nothing committed, diff plans that
// element back although the kernel holds it; after any commit, or with
// another namespace's identity, the kernel is read and diff plans nothing.
func TestOneShotElementCache(t *testing.T) {
	nettest.RequireRoot(t)
	nettest.RequireTool(t, "nft")
	ns := nettest.NewNetNS(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	var elems []string
	for i := range 2000 {
		v := uint32(10)<<24 | uint32(i)*16
		elems = append(elems, fmt.Sprintf("%d.%d.%d.%d/30", v>>24, v>>16&0xff, v>>8&0xff, v&0xff))
	}
	file := nettest.WriteFile(t, dir, "c.yaml", "version: 1\nnftables:\n  ip bench:\n    sets:\n      s:\n        type: ipv4_addr\n        flags: [interval]\n        elements: ["+strings.Join(elems, ", ")+"]\n")
	cli := func(cmd string) nettest.Result {
		return nettest.CLI(t, cmd, "-c", file, "--netns", ns, "--state-dir", state)
	}
	if r := cli("apply"); r.Code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	files, _ := filepath.Glob(filepath.Join(state, "*", "*", nftcache.FileName))
	if more, _ := filepath.Glob(filepath.Join(state, nftcache.FileName)); len(more) > 0 {
		files = append(files, more...)
	}
	if len(files) != 1 {
		t.Fatalf("cache files %v, want one", files)
	}
	path := files[0]
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("cache file: %v, mode %v", err, st.Mode())
	}
	if r := cli("diff"); r.Code != 0 {
		t.Fatalf("diff after apply: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// edit drops the first element of the cached set and writes the file
	// back with the given identity change.
	edit := func(netnsDelta uint64) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		id, s, err := nftcache.Decode(b)
		if err != nil || len(s.Sets) != 1 || len(s.Sets[0].Elems) != len(elems) {
			t.Fatalf("cache: %v, %+v", err, len(s.Sets))
		}
		s.Sets[0].Elems = s.Sets[0].Elems[1:]
		id.Netns += netnsDelta
		if err := os.WriteFile(path, nftcache.Encode(id, s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	edit(0)
	if r := cli("diff"); r.Code != 2 || !strings.Contains(r.Stdout, "+ nft element ip bench set s element 10.0.0.0/30") {
		t.Fatalf("diff with the edited cache, nothing committed: %d, want 2 and the dropped element planned (the cache taken)\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// Any commit moves the generation: the kernel is read.
	nettest.InNS(t, ns, "nft", "add", "table", "ip", "other")
	if r := cli("diff"); r.Code != 0 {
		t.Fatalf("diff after a commit: %d, want 0 (the kernel read, not the stale cache)\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// An apply writes the cache again, at the new generation.
	if r := cli("apply"); r.Code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	edit(1)
	if r := cli("diff"); r.Code != 0 {
		t.Fatalf("diff with another namespace's cache: %d, want 0 (ignored)\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// Drift behind our back is a commit too: found and repaired.
	if r := cli("apply"); r.Code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	nettest.InNS(t, ns, "nft", "delete", "element", "ip", "bench", "s", "{ 10.0.0.16/30 }")
	if r := cli("apply"); r.Code != 0 || !strings.Contains(r.Stdout, "10.0.0.16/30") {
		t.Fatalf("apply after an element was deleted behind its back: %d, want it added back\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if got := nettest.InNS(t, ns, "nft", "list", "set", "ip", "bench", "s"); !strings.Contains(got, "10.0.0.16/30") {
		t.Fatalf("the element is not back:\n%s", got)
	}
	// A file with fewer elements than the cache's threshold leaves none.
	small := nettest.WriteFile(t, dir, "c.yaml", "version: 1\nnftables:\n  ip bench:\n    sets:\n      s:\n        type: ipv4_addr\n        elements: [10.0.0.1]\n")
	if r := nettest.CLI(t, "apply", "-c", small, "--netns", ns, "--state-dir", state); r.Code != 0 {
		t.Fatalf("apply: %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("cache file after a small set: %v, want none", err)
	}
}
