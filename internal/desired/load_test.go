package desired

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Issue 29: a configuration file over MaxFileSize, the main file or a
// drop-in, is refused by its size before it is read: a 1 GiB drop-in was
// read whole before (1 GiB resident). A file of exactly MaxFileSize is
// read.
func TestConfigFileSizeBound(t *testing.T) {
	dir := t.TempDir()
	sparse := func(name string, size int64) string {
		t.Helper()
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		// Sparse: the test costs no disk, and a reader that read it
		// whole would still take a gigabyte of memory.
		if err := f.Truncate(size); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	main := filepath.Join(dir, "main.yaml")
	if err := os.WriteFile(main, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	confd := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(confd, 0o755); err != nil {
		t.Fatal(err)
	}
	big := sparse("big.yaml", 1<<30)
	if err := os.Rename(sparse("drop.yaml", 1<<30), filepath.Join(confd, "10-big.yaml")); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for _, tt := range []struct {
		main, dropIn, path string
	}{
		{big, "", big},
		{main, confd, filepath.Join(confd, "10-big.yaml")},
	} {
		_, err := Load(tt.main, tt.dropIn)
		if err == nil {
			t.Fatalf("%s: loaded", tt.path)
		}
		if msg := err.Error(); !strings.Contains(msg, tt.path) || !strings.Contains(msg, "larger than 32 MiB") {
			t.Errorf("%s: %s", tt.path, msg)
		}
	}
	runtime.ReadMemStats(&after)
	// Refused by their size, before a read: what the refusals allocated
	// says so (a time would say it only on a quiet machine).
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 1<<20 {
		t.Errorf("refusing two 1 GiB files allocated %d bytes", grew)
	}
	if b, err := ReadFile(sparse("at.yaml", MaxFileSize)); err != nil || len(b) != MaxFileSize {
		t.Errorf("a file of MaxFileSize: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(sparse("over.yaml", MaxFileSize+1)); err == nil {
		t.Error("a file of MaxFileSize+1 bytes read")
	}
}

// A file that is not regular has no size to check: it is read up to the
// bound and refused past it, never read to its end (/dev/zero has none).
func TestConfigFileNotRegularBounded(t *testing.T) {
	// That it returns at all says it stopped at the bound.
	if _, err := ReadFile("/dev/zero"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("/dev/zero: %v", err)
	}
}
