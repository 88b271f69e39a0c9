package desired

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// Issue 12 finding 11: a key file swapped for a FIFO while validate reads it
// must not make validate wait for a writer. A swapper alternates a regular
// key file and a FIFO at the path; whenever a reader has the FIFO open, it
// writes "junk" into it, which a reader that opened the FIFO to read reports
// as "does not hold a WireGuard key" (without the writer, validate would
// hang there). The fixed reader opens once with O_NONBLOCK and checks the
// descriptor: it sees a regular key or "not a regular file", never junk.
func TestKeyFileSwappedForFIFO(t *testing.T) {
	dir := t.TempDir()
	key := writeKey(t, dir, "wg.key", testKey+"\n", 0o600)
	reg := writeKey(t, dir, "reg", testKey+"\n", 0o600)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tmp := filepath.Join(dir, "tmp")
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			src := reg
			if i%2 == 1 {
				src = fifo
			}
			_ = os.Remove(tmp)
			if err := os.Link(src, tmp); err != nil {
				panic(err)
			}
			if err := os.Rename(tmp, key); err != nil {
				panic(err)
			}
			// Feed a reader that waits on the FIFO, so a broken reader
			// reports junk instead of hanging the test.
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				_, _ = w.WriteString("junk\n")
				w.Close()
			}
		}
	}()
	// Whichever way the test ends, the swapper stops and a reader left on
	// the FIFO is fed.
	defer func() {
		close(stop)
		wg.Wait()
	}()
	var regular, notRegular int
	for i := 0; i < 4000; i++ {
		_, err := parseWG(t, dir, fmt.Sprintf("      private-key-file: %s\n", key))
		switch {
		case err == nil:
			regular++
		case strings.Contains(err.Error(), "is not a regular file"):
			notRegular++
		case strings.Contains(err.Error(), "does not hold a WireGuard key"):
			t.Fatalf("validate read a FIFO put at the key file's path (and would have waited for a writer): %v", err)
		default:
			t.Fatalf("unexpected error: %v", err)
		}
	}
	t.Logf("4000 reads: %d regular, %d refused as not regular", regular, notRegular)
}

// A key file that is a symlink is refused, not followed; one larger than a
// key file can be is not read to the end.
func TestKeyFileSymlinkAndSize(t *testing.T) {
	dir := t.TempDir()
	target := writeKey(t, dir, "real.key", testKey+"\n", 0o600)
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := parseWG(t, dir, "      private-key-file: "+link+"\n"); err == nil || !strings.Contains(err.Error(), "is a symlink, which is not followed") {
		t.Errorf("symlinked key: %v", err)
	}
	big := writeKey(t, dir, "big.key", testKey+"\n"+strings.Repeat("#\n", 4096), 0o600)
	if _, err := parseWG(t, dir, "      private-key-file: "+big+"\n"); err == nil || !strings.Contains(err.Error(), "larger than 4096 bytes") {
		t.Errorf("large key file: %v", err)
	}
}
