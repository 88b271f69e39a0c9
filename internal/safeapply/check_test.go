package safeapply

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/desired"
)

// sampleFile is a transaction file as netreconcile writes it: a pending
// transaction with a drop-in, the last one, the confirmed configuration,
// a rejection and counts.
func sampleFile() *File {
	at := time.Date(2026, 11, 24, 1, 15, 46, 123456789, time.UTC)
	snap := func(main string, by string) *Snapshot {
		s := &Snapshot{Main: "/etc/netreconcile/netreconcile.yaml", DropIn: "/etc/netreconcile/conf.d", At: at, By: by, Files: []FileCopy{
			{Path: "/etc/netreconcile/netreconcile.yaml", Mode: 0o640, UID: 0, GID: 998, Data: []byte(main)},
			{Path: "/etc/netreconcile/conf.d/10-a.yaml", Mode: 0o644, Link: "/srv/deploy/10-a.yaml", Data: []byte("version: 1\n")},
			{Path: "/etc/netreconcile/conf.d/20-b.yml", Mode: 0o600, Data: []byte("version: 1\n")},
			{Path: "/srv/routes/table100.routes", Mode: 0o644, Data: []byte("10.0.0.0/8 via 192.0.2.1\n"), Side: true},
		}}
		s.Hash = hashFiles(s.Files)
		return s
	}
	return &File{
		Pending: &Txn{ID: "20261124T011546Z-2e1077", State: Pending, Started: at, Deadline: at.Add(time.Minute), Window: Duration(time.Minute),
			BootID: "0b5c4e9a-6c2e-4b7e-9d1e-2f3a4b5c6d7e", Netns: "lab", Restore: snap("version: 1\n", "confirm"), Applied: snap("version: 1\nlinks: {}\n", "apply"),
			Before: "version: 1\nlinks:\n\tbr0: {kind: bridge}\n", Plans: []json.RawMessage{json.RawMessage(`{"ops":[]}`)},
			Probes: []string{"tcp:10.0.0.1:22", "gateway"}, Timer: "systemd:netreconcile-rollback-20261124T011546Z-2e1077-1", Extended: 1},
		Last: &Txn{ID: "20261123T000000Z-000000", State: RolledBack, Started: at, Deadline: at, Window: Duration(time.Second), BootID: "boot-1",
			Timer: "process:4242", Ended: at, Cause: CauseProbe, Detail: "probe tcp:10.0.0.1:22 failed after the apply: dial tcp: timeout"},
		Confirmed: snap("version: 1\n", "run"),
		Rejected:  &Rejected{ID: "20261123T000000Z-000000", Hash: strings.Repeat("ab", 32), Sides: []string{"/srv/routes/table100.routes"}, Error: "restore files: permission denied"},
		Counts:    Counts{Confirmed: 3, RolledBack: map[Cause]uint64{CauseProbe: 1, CauseTimeout: 2}},
	}
}

// A file as netreconcile writes it is read and written back byte for byte.
func TestDecodeWritesBackUnchanged(t *testing.T) {
	b, err := sampleFile().Encode()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, again) {
		t.Fatalf("written back differently:\n%s\n%s", b, again)
	}
}

// Issue 29: every string of the file is checked when it is loaded; a file
// with one forged field is refused whole, naming the field and quoting
// nothing of the value.
func TestDecodeRefusesForgedFields(t *testing.T) {
	const evil = "x$(touch /tmp/pwned)\x1b]2;owned\x07"
	for _, tt := range []struct {
		field  string
		forge  func(f *File)
		quoted string // a part of the value that must not be quoted
	}{
		{"pending.id", func(f *File) { f.Pending.ID = evil }, "pwned"},
		{"pending.id", func(f *File) { f.Pending.ID = "-rf" }, "-rf"},
		{"pending.id", func(f *File) { f.Pending.ID = strings.Repeat("a", 65) }, "aaaa"},
		{"pending.id", func(f *File) { f.Pending.ID = "../../etc/passwd" }, "passwd"},
		{"pending.state", func(f *File) { f.Pending.State = RolledBack }, ""},
		{"pending.boot_id", func(f *File) { f.Pending.BootID = evil }, "pwned"},
		{"pending.netns", func(f *File) { f.Pending.Netns = "--state-dir=/tmp/x" }, "/tmp/x"},
		{"pending.netns", func(f *File) { f.Pending.Netns = "/proc/1/ns/../../../etc" }, "etc"},
		{"pending.timer", func(f *File) { f.Pending.Timer = "systemd:--no-block" }, "no-block"},
		{"pending.timer", func(f *File) { f.Pending.Timer = "systemd:sshd.service" }, "sshd"},
		{"pending.timer", func(f *File) { f.Pending.Timer = "process:1 2" }, ""},
		{"pending.timer", func(f *File) { f.Pending.Timer = "daemon:-1" }, ""},
		{"pending.probes[1]", func(f *File) { f.Pending.Probes[1] = evil }, "pwned"},
		{"pending.before", func(f *File) { f.Pending.Before = "a\x1b[2J" }, ""},
		{"pending.window", func(f *File) { f.Pending.Window = -1 }, ""},
		{"pending.extended", func(f *File) { f.Pending.Extended = -1 }, ""},
		{"pending: no start or deadline", func(f *File) { f.Pending.Deadline = time.Time{} }, ""},
		{"pending: no restore point", func(f *File) { f.Pending.Restore = nil }, ""},
		{"pending: pending, but ended", func(f *File) { f.Pending.Cause = CauseManual }, ""},
		{"pending.restore.main", func(f *File) { f.Pending.Restore.Main = "etc/x.yaml" }, ""},
		{"pending.restore.files[0].path", func(f *File) { f.Pending.Restore.Files[0].Path = "/etc/shadow" }, "shadow"},
		{"pending.restore.files[1].path", func(f *File) { f.Pending.Restore.Files[1].Path = "/etc/cron.d/x.yaml" }, "cron"},
		{"pending.restore.files[1].path", func(f *File) { f.Pending.Restore.Files[1].Path = "/etc/netreconcile/conf.d/../x.yaml" }, ""},
		{"pending.restore.files[2].path", func(f *File) { f.Pending.Restore.Files[2].Path = "/etc/netreconcile/conf.d/.hidden.yaml" }, "hidden"},
		{"pending.restore.files[2].path", func(f *File) { f.Pending.Restore.Files[2].Path = f.Pending.Restore.Files[1].Path }, ""},
		{"pending.restore.files[0].mode", func(f *File) { f.Pending.Restore.Files[0].Mode = 0o4755 }, ""},
		{"pending.restore.files[3].path", func(f *File) { f.Pending.Restore.Files[3].Path = "srv/x" }, ""},
		{"pending.restore.files[4].path", func(f *File) {
			r := f.Pending.Restore
			r.Files = append(r.Files, r.Files[3])
			r.Hash = hashFiles(r.Files)
		}, ""},
		{"pending.restore.files[4]: a drop-in after a side file", func(f *File) {
			r := f.Pending.Restore
			r.Files = append(r.Files, FileCopy{Path: "/etc/netreconcile/conf.d/30-c.yaml", Data: []byte("version: 1\n")})
			r.Hash = hashFiles(r.Files)
		}, ""},
		{"pending.restore.files[0].path", func(f *File) { f.Pending.Restore.Files[0].Side = true }, ""},
		{"rejected.sides[0]", func(f *File) { f.Rejected.Sides[0] = "/dev/../dev/zero" }, "zero"},
		{"rejected.sides[0]", func(f *File) { f.Rejected.Sides[0] = "x\x1b[2J" }, ""},
		{"pending.restore.files[0]: uid", func(f *File) { f.Pending.Restore.Files[0].UID = -1 }, ""},
		{"pending.restore.files[1].link", func(f *File) { f.Pending.Restore.Files[1].Link = evil }, "pwned"},
		{"pending.restore.by", func(f *File) { f.Pending.Restore.By = "attacker" }, "attacker"},
		{"pending.restore.hash", func(f *File) { f.Pending.Restore.Files[0].Data = []byte("version: 1\nroutes: []\n") }, ""},
		{"pending.restore.hash", func(f *File) { f.Pending.Restore.Hash = "x" }, ""},
		{"last.state", func(f *File) { f.Last.State = Pending }, ""},
		{"last: ended, but no end time", func(f *File) { f.Last.Ended = time.Time{} }, ""},
		{"last.cause", func(f *File) { f.Last.Cause = Cause(evil) }, "pwned"},
		{"last.detail", func(f *File) { f.Last.Detail = evil }, "pwned"},
		{"last.detail", func(f *File) { f.Last.Detail = "a\u0085b" }, ""},
		{"last.detail", func(f *File) { f.Last.Detail = "failed\nApplied 3 of 3 operations." }, "Applied"},
		{"confirmed.files", func(f *File) { f.Confirmed.Files = nil }, ""},
		{"rejected.id", func(f *File) { f.Rejected.ID = evil }, "pwned"},
		{"rejected.hash", func(f *File) { f.Rejected.Hash = "zz" }, ""},
		{"rejected.error", func(f *File) { f.Rejected.Error = "\u009b31m" }, ""},
		{"counts.rolled_back", func(f *File) { f.Counts.RolledBack[Cause(evil)] = 1 }, "pwned"},
	} {
		f := sampleFile()
		tt.forge(f)
		b, err := f.Encode()
		if err != nil {
			t.Fatal(err)
		}
		_, err = Decode(b)
		if err == nil {
			t.Errorf("%s forged: loaded", tt.field)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.field) {
			t.Errorf("%s forged: the error does not name the field: %s", tt.field, msg)
		}
		if strings.ContainsAny(msg, "\x1b\x07") || tt.quoted != "" && strings.Contains(msg, tt.quoted) {
			t.Errorf("%s forged: the error quotes the value: %q", tt.field, msg)
		}
	}
	for _, b := range []string{`{"version":1,"pending":{"id":`, `[]`, `{"version":2}`, "{\"version\":1,\"x\":\"\x1b\"}"} {
		if _, err := Decode([]byte(b)); err == nil || strings.ContainsRune(err.Error(), '\x1b') {
			t.Errorf("Decode(%q): %v", b, err)
		}
	}
}

// What a writer records from elsewhere (an error quoting a kernel object's
// name) is cleaned so that its own file is never refused.
func TestEndCleansDetail(t *testing.T) {
	f := sampleFile()
	f.end(RolledBack, CauseApply, "create link \x1b[2Jevil: exists\n\xff", time.Now())
	b, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Decode(b)
	if err != nil {
		t.Fatalf("a file netreconcile wrote is refused: %v", err)
	}
	if !strings.Contains(g.Last.Detail, "evil: exists; ") {
		t.Errorf("detail %q", g.Last.Detail)
	}
}

// FuzzDecode: transaction.json's parser never panics, refuses what it
// cannot take whole, and what it accepts encodes to a file that decodes to
// the same transactions and encodes again byte for byte (a file as Save
// writes it is written back unchanged). The file is bounded (maxFileSize)
// before it is parsed, and every list and string is bounded by check.
func FuzzDecode(f *testing.F) {
	b, err := sampleFile().Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"version":1,"counts":{"confirmed":0,"rolled_back":null}}`))
	f.Add([]byte(`{"version":1,"last":{"id":"a","state":"confirmed","started":"2026-11-24T01:15:46+01:00","deadline":"2026-11-24T01:15:46Z","window":"1s","boot_id":"b","ended":"2026-11-24T01:15:47Z"}}`))
	same := cmp.Options{
		cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) }),
		// A plan is compacted when it is written back (json.Marshal of
		// a RawMessage); a []byte is assignable to RawMessage, hence
		// the filter on the path's type.
		cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() == reflect.TypeFor[json.RawMessage]() },
			cmp.Comparer(func(a, b json.RawMessage) bool {
				var ca, cb bytes.Buffer
				return json.Compact(&ca, a) == nil && json.Compact(&cb, b) == nil && bytes.Equal(ca.Bytes(), cb.Bytes())
			})),
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			return
		}
		out, err := d.Encode()
		if err != nil {
			t.Fatalf("%q was accepted and cannot be written back: %v", b, err)
		}
		d2, err := Decode(out)
		if err != nil {
			t.Fatalf("%q was accepted; written back as %q, which is refused: %v", b, out, err)
		}
		if diff := cmp.Diff(d, d2, same); diff != "" {
			t.Fatalf("%q: written back as %q, which decodes to another file:\n%s", b, out, diff)
		}
		again, err := d2.Encode()
		if err != nil || !bytes.Equal(out, again) {
			t.Fatalf("%q: written back as %q, then as %q (%v)", b, out, again, err)
		}
	})
}

// The pin reads again the side files a rejection names, at every pass of
// the daemon and in every plain apply: paths from the state directory. A
// FIFO, a device and a file past the side files' bound are left out
// without waiting or reading them whole (found by the adversarial review:
// os.ReadFile of /dev/zero never returned).
func TestPinSidesBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	ok := filepath.Join(dir, "ok.routes")
	if err := os.WriteFile(ok, []byte("10.0.0.0/8 via 192.0.2.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []desired.Source, 1)
	go func() { done <- withSides(nil, []string{fifo, "/dev/zero", big, ok}) }()
	select {
	case got := <-done:
		if len(got) != 1 || got[0].Name != ok {
			t.Errorf("read %d side files, want only %s", len(got), ok)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("withSides did not return: it waits on a FIFO or reads a device")
	}
}
