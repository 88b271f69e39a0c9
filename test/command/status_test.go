package command

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// A rollback records rolling_back before its first write; killed after
// that, it leaves the transaction pending in the record, and whoever comes
// next finishes it. status showed such a transaction as pending, with a
// confirm command and time left, when no confirm can succeed: it shows it
// rolling back, with its cause, who finishes it and how to finish it now,
// in text and in JSON (which follows the schema), and changes nothing.
func TestStatusShowsARollbackUnderWay(t *testing.T) {
	nettest.RequireRoot(t)
	sch := schemas(t)
	h := newHost(t)
	good := "version: 1\nroutes:\n  - {to: 10.66.0.0/24, type: blackhole}\n"
	main := h.write("nr.yaml", good)
	cand := h.write("cand.yaml", good+"  - {to: 10.67.0.0/24, type: blackhole}\n")
	t.Cleanup(func() { h.run("apply", "-c", h.write("empty.yaml", "version: 1\n")) })
	if r := h.run("apply", "-c", main); r.code != 0 {
		t.Fatalf("apply: %s", r)
	}
	r := h.run("apply", "-c", main, "--confirm-within", "2m", "--candidate", cand, "--rollback-timer", "process", "-o", "json")
	var begun struct {
		Transaction *struct{ ID, Timer string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &begun); err != nil || r.code != 0 || begun.Transaction == nil {
		t.Fatalf("apply --confirm-within: %v\n%s", err, r)
	}
	id := begun.Transaction.ID
	var pid int
	if _, err := fmt.Sscanf(begun.Transaction.Timer, "process:%d", &pid); err == nil {
		t.Cleanup(func() { killTimer(pid, id) })
	}

	// The record a rollback leaves when it is killed right after its
	// first write to it.
	// The namespace's own directory under the state directory.
	var paths []string
	_ = filepath.WalkDir(h.state, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "transaction.json" {
			paths = append(paths, p)
		}
		return nil
	})
	if len(paths) != 1 {
		t.Fatalf("want one transaction.json under %s, found %q", h.state, paths)
	}
	path := paths[0]
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatal(err)
	}
	pending, ok := rec["pending"].(map[string]any)
	if !ok {
		t.Fatalf("no pending transaction in %s", data)
	}
	pending["rolling_back"], pending["detail"] = "manual", "rolled back by netreconcile rollback"
	if data, err = json.Marshal(rec); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}

	r = h.run("status", "-c", main, "-o", "json")
	if r.code != 0 {
		t.Fatalf("status -o json: %s", r)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(r.stdout)))
	if err != nil {
		t.Fatalf("status -o json: %v\n%s", err, r)
	}
	if err := sch["status.json"].Validate(v); err != nil {
		t.Errorf("status -o json does not follow its schema: %v\n%s", err, r)
	}
	var st struct {
		Transaction *struct {
			ID, State      string
			SecondsLeft    float64 `json:"seconds_left"`
			ConfirmCommand *string `json:"confirm_command"`
			Cause, Detail  *string
			Ended          *string
		}
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if tx := st.Transaction; tx == nil || tx.ID != id || tx.State != "rolling_back" || tx.SecondsLeft != 0 || tx.ConfirmCommand != nil ||
		tx.Cause == nil || *tx.Cause != "manual" || tx.Detail == nil || tx.Ended != nil {
		t.Errorf("status -o json shows the transaction whose rollback began as\n%s", r.stdout)
	}

	r = h.run("status", "-c", main)
	if r.code != 0 || !strings.Contains(r.stdout, "Transaction "+id+" rolling back (manual)") || strings.Contains(r.stdout, "Confirm:") ||
		!strings.Contains(r.stdout, "finishes it") || !strings.Contains(r.stdout, "netreconcile rollback --netns") {
		t.Errorf("status shows the transaction whose rollback began as\n%s", r)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Error("status changed transaction.json")
	}

	// The next writer finishes the rollback: a confirm is refused.
	if r := h.run("confirm", "-c", main, id); r.code != 1 {
		t.Errorf("confirm of a transaction rolling back: %s", r)
	}
	r = h.run("status", "-c", main, "-o", "json")
	var done struct {
		Transaction     *json.RawMessage
		LastTransaction *struct{ ID, State, Cause string } `json:"last_transaction"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &done); err != nil || done.Transaction != nil || done.LastTransaction == nil ||
		done.LastTransaction.ID != id || done.LastTransaction.State != "rolled_back" || done.LastTransaction.Cause != "manual" {
		t.Errorf("after the confirm, status: %v\n%s", err, r)
	}
	if b, _ := os.ReadFile(main); string(b) != good {
		t.Errorf("the finished rollback left the main file\n%s", b)
	}
}
