package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

// jsonOut is the union of what validate, diff and apply print with -o json.
type jsonOut struct {
	Valid *bool `json:"valid"`
	Ops   *[]struct {
		Action, Kind, ID, Summary string
	} `json:"ops"`
	Failed []struct {
		ID      string
		OpError string `json:"op_error"`
	} `json:"failed"`
	Error  string `json:"error"`
	Errors []struct {
		File          string
		Line, Column  int
		Path, Message string
		Text          string
	} `json:"errors"`
	ErrorCount int      `json:"error_count"`
	Conflicts  []string `json:"conflicts"`
}

func decode(t *testing.T, r nettest.Result) jsonOut {
	t.Helper()
	var o jsonOut
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s\nstderr:\n%s", err, r.Stdout, r.Stderr)
	}
	return o
}

// validate, diff and apply with -o json print one JSON object on success and
// on failure; an invalid file gives every error with its position, the same
// text as standard error, and the text output stays as it was.
func TestJSONOutputInvalid(t *testing.T) {
	dir := t.TempDir()
	conf := nettest.WriteFile(t, dir, "nr.yaml", "version: 1\nlinks:\n  br0: {kind: bridge, mtu: 20}\n  br1: {kind: brigde}\n")
	r := nettest.CLI(t, "validate", "-c", conf, "-o", "json")
	o := decode(t, r)
	if r.Code != 1 || o.Valid == nil || *o.Valid || o.ErrorCount != 2 || len(o.Errors) != 2 {
		t.Fatalf("exit %d, %+v", r.Code, o)
	}
	e := o.Errors[0]
	if e.File != conf || e.Line != 3 || e.Column != 28 || e.Path != "links.br0.mtu" || !strings.Contains(e.Message, "MTU") ||
		e.Text != conf+":3:28: links.br0.mtu: "+e.Message {
		t.Errorf("first error: %+v", e)
	}
	if !strings.Contains(r.Stderr, e.Text) || !strings.Contains(o.Error, e.Text) {
		t.Errorf("standard error and \"error\" should hold %q:\n%s\n%s", e.Text, r.Stderr, o.Error)
	}
	if o.Errors[1].Line != 4 || o.Errors[1].Path != "links.br1.kind" {
		t.Errorf("second error: %+v", o.Errors[1])
	}
	// diff prints no "ops" at all: an empty list would read as "in sync".
	r = nettest.CLI(t, "diff", "-c", conf, "-o", "json", "--state-dir", filepath.Join(dir, "state"))
	if o := decode(t, r); r.Code != 1 || o.Ops != nil || len(o.Errors) != 2 {
		t.Errorf("diff: exit %d, %+v", r.Code, o)
	}
	// Text output unchanged.
	r = nettest.CLI(t, "validate", "-c", conf)
	if r.Code != 1 || r.Stdout != "" || !strings.HasPrefix(r.Stderr, "netreconcile validate: invalid configuration (2 errors):\n  "+e.Text) {
		t.Errorf("text: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r := nettest.CLI(t, "validate", "-c", conf, "-o", "yaml"); r.Code != 64 {
		t.Errorf("-o yaml: exit %d", r.Code)
	}
}

// A key typed where it does not belong is hidden in JSON as it is on
// standard error.
func TestJSONOutputRedacts(t *testing.T) {
	dir := t.TempDir()
	key := "yAnz5TF+lXXJte14tji3zlMNq+hd2rYUIgJBgB3fBmk="
	conf := nettest.WriteFile(t, dir, "nr.yaml", "version: 1\nlinks:\n  br0: {kind: bridge, alias: "+key+", mtu: x}\n")
	r := nettest.CLI(t, "validate", "-c", conf, "-o", "json")
	if r.Code != 1 || strings.Contains(r.Stdout, key) || strings.Contains(r.Stdout, key[:43]) {
		t.Errorf("exit %d, key printed:\n%s", r.Code, r.Stdout)
	}
}

func TestJSONOutputValid(t *testing.T) {
	dir := t.TempDir()
	conf := nettest.WriteFile(t, dir, "nr.yaml", "version: 1\nlinks:\n  br0: {kind: bridge}\n")
	r := nettest.CLI(t, "validate", "-c", conf, "-o", "json")
	var o struct {
		Valid  bool
		Config string
		Files  []string
		Counts map[string]int
	}
	if err := json.Unmarshal([]byte(r.Stdout), &o); err != nil || r.Code != 0 || !o.Valid || o.Config != conf ||
		len(o.Files) != 1 || o.Counts["links"] != 1 || r.Stderr != "" {
		t.Errorf("exit %d, %v, %+v\n%s", r.Code, err, o, r.Stderr)
	}
}

// apply -o json lists the operations done (none on the second run); a
// conflict fails diff and apply with the conflicting object named.
func TestJSONOutputApplyAndConflict(t *testing.T) {
	nettest.RequireRoot(t)
	ns := nettest.NewNetNS(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	conf := nettest.WriteFile(t, dir, "nr.yaml", "version: 1\nlinks:\n  br0: {kind: bridge, mtu: 1400}\n")
	run := func(cmd string) (nettest.Result, jsonOut) {
		r := nettest.CLI(t, cmd, "-c", conf, "--netns", ns, "--state-dir", state, "-o", "json")
		return r, decode(t, r)
	}
	if r, o := run("diff"); r.Code != 2 || o.Ops == nil || len(*o.Ops) != 1 || (*o.Ops)[0].Action != "create" {
		t.Fatalf("diff: exit %d %+v", r.Code, o)
	}
	if r, o := run("apply"); r.Code != 0 || o.Ops == nil || len(*o.Ops) != 1 || (*o.Ops)[0].ID != "br0" || o.Error != "" {
		t.Fatalf("apply: exit %d %+v", r.Code, o)
	}
	if r, o := run("apply"); r.Code != 0 || o.Ops == nil || len(*o.Ops) != 0 {
		t.Fatalf("second apply: exit %d %+v", r.Code, o)
	}
	// A foreign veth where the file wants a bridge.
	nettest.IP(t, ns, "link", "add", "ans0", "type", "veth", "peer", "ans1")
	if err := os.WriteFile(conf, []byte("version: 1\nlinks:\n  br0: {kind: bridge, mtu: 1400}\n  ans0: {kind: bridge}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"diff", "apply"} {
		r, o := run(cmd)
		if r.Code != 1 || len(o.Conflicts) != 1 || !strings.Contains(o.Conflicts[0], "ans0") || o.Ops == nil ||
			!strings.Contains(o.Error, "conflict") {
			t.Errorf("%s: exit %d %+v\n%s", cmd, r.Code, o, r.Stderr)
		}
	}
}
