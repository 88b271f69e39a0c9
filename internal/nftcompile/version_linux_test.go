package nftcompile

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// fakeNft writes a program that answers --version with version and counts
// its runs in a file beside it.
func fakeNft(t *testing.T, dir, version string) (prog string, runs func() int) {
	t.Helper()
	prog = filepath.Join(dir, "nft")
	count := filepath.Join(dir, "runs")
	script := "#!/bin/sh\necho x >> " + count + "\necho '" + version + "'\n"
	// A new file each time (another inode), as a package upgrade makes.
	tmp := prog + ".new"
	if err := os.WriteFile(tmp, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, prog); err != nil {
		t.Fatal(err)
	}
	return prog, func() int {
		b, _ := os.ReadFile(count)
		return strings.Count(string(b), "x")
	}
}

func openState(t *testing.T) (*statedir.Dir, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "state")
	d, err := statedir.Open(p, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d, p
}

// version asks a new Nft, as a new command does: nothing in memory.
func version(t *testing.T, prog string, d *statedir.Dir) string {
	t.Helper()
	v, err := (&Nft{Path: prog}).VersionCached(context.Background(), d, true)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// nft's version is kept in the state directory for the program as it is:
// the next command does not run nft --version; another program at the
// path (replaced, rewritten, touched) is asked again.
func TestNftVersionCache(t *testing.T) {
	bin := t.TempDir()
	prog, runs := fakeNft(t, bin, "nftables v1.0.6 (Lester Gooch #5)")
	d, _ := openState(t)
	if v := version(t, prog, d); v != "nftables v1.0.6 (Lester Gooch #5)" || runs() != 1 {
		t.Fatalf("first: %q after %d runs", v, runs())
	}
	if v := version(t, prog, d); v != "nftables v1.0.6 (Lester Gooch #5)" || runs() != 1 {
		t.Fatalf("cached: %q after %d runs, want no second run", v, runs())
	}
	// Another program at the path: an upgrade.
	prog, _ = fakeNft(t, bin, "nftables v1.0.9 (Old Doc Yak #3)")
	if v := version(t, prog, d); v != "nftables v1.0.9 (Old Doc Yak #3)" || runs() != 2 {
		t.Fatalf("replaced: %q after %d runs", v, runs())
	}
	// The same file rewritten in place, its size kept: its times change.
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho x >> "+filepath.Join(bin, "runs")+"\necho 'nftables v1.1.1 (Commodore Bullmoose #2)'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if v := version(t, prog, d); v != "nftables v1.1.1 (Commodore Bullmoose #2)" || runs() != 3 {
		t.Fatalf("rewritten: %q after %d runs", v, runs())
	}
	// Touched only: asked again.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(prog, later, later); err != nil {
		t.Fatal(err)
	}
	version(t, prog, d)
	if runs() != 4 {
		t.Fatalf("touched: %d runs, want 4", runs())
	}
	// Another path to the same program is another key.
	link := filepath.Join(t.TempDir(), "nft")
	if err := os.Symlink(prog, link); err != nil {
		t.Fatal(err)
	}
	version(t, link, d)
	if runs() != 5 {
		t.Fatalf("another path: %d runs, want 5", runs())
	}
	// Without a directory, and read-only: nothing written.
	d2, p2 := openState(t)
	if _, err := (&Nft{Path: prog}).VersionCached(context.Background(), d2, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(p2, versionFile)); !os.IsNotExist(err) {
		t.Errorf("a read-only run wrote the cache: %v", err)
	}
}

// One process asks once per program, and again when the program changes
// (a daemon across an upgrade).
func TestNftVersionInMemory(t *testing.T) {
	bin := t.TempDir()
	prog, runs := fakeNft(t, bin, "nftables v1.0.6")
	n := &Nft{Path: prog}
	for i := 0; i < 3; i++ {
		if _, err := n.Version(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if runs() != 1 {
		t.Fatalf("%d runs for one program, want 1", runs())
	}
	fakeNft(t, bin, "nftables v1.0.9")
	if v, err := n.Version(context.Background()); err != nil || v != "nftables v1.0.9" || runs() != 2 {
		t.Fatalf("after an upgrade: %q, %v, %d runs", v, err, runs())
	}
}

// A cache file another user could have written is ignored: one planted (or
// given) to another user, one left writable by others, a symlink. Its
// version would be part of every rule's key.
func TestNftVersionCacheUntrusted(t *testing.T) {
	// Chowning a file to another user takes root (test/nettest's
	// RequireRoot would be an import cycle: it runs the command line).
	if os.Geteuid() != 0 {
		if os.Getenv("NETRECONCILE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("this test needs root and NETRECONCILE_REQUIRE_PRIVILEGED=1 requires it to run")
		}
		t.Skip("needs root (to give a file to another user)")
	}
	bin := t.TempDir()
	prog, runs := fakeNft(t, bin, "nftables v1.0.6")
	id, err := identify(prog)
	if err != nil {
		t.Fatal(err)
	}
	forged := `{"Program":` + mustJSON(t, id) + `,"Version":"nftables v9.9.9 forged"}`
	for name, plant := range map[string]func(t *testing.T, p string){
		"owned by nobody": func(t *testing.T, p string) {
			write(t, p, forged, 0o600)
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		},
		"writable by others": func(t *testing.T, p string) { write(t, p, forged, 0o666) },
		"writable by group":  func(t *testing.T, p string) { write(t, p, forged, 0o620) },
		"a symlink": func(t *testing.T, p string) {
			target := filepath.Join(t.TempDir(), "v")
			write(t, target, forged, 0o600)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			d, sp := openState(t)
			plant(t, filepath.Join(sp, versionFile))
			before := runs()
			if v := version(t, prog, d); v != "nftables v1.0.6" || runs() != before+1 {
				t.Errorf("%q after %d runs: the planted file was trusted", v, runs()-before)
			}
		})
	}
	// The control: the same record, trusted, is taken as it is.
	d, sp := openState(t)
	write(t, filepath.Join(sp, versionFile), forged, 0o600)
	before := runs()
	if v := version(t, prog, d); v != "nftables v9.9.9 forged" || runs() != before {
		t.Errorf("a trusted record: %q after %d runs", v, runs()-before)
	}
}

func write(t *testing.T, p, s string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
