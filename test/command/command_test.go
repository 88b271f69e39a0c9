// Package command holds the command line's output contract to the real
// binary: every -o json document against its JSON Schema in docs/schema
// (schema_test.go), the schemas' stable fields against their golden
// (stable_test.go), and every command's text output inert whatever names
// the kernel and the state directory hold (inert_test.go).
package command

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/test/nettest"
)

var binary string

func TestMain(m *testing.M) { nettest.MainWithBinary(m, &binary) }

// schemaDir is the repository's docs/schema, two levels up.
var schemaDir = filepath.Join("..", "..", "docs", "schema")

// configSchema is the schema of the configuration file, beside the output
// schemas: an input, generated from the loader's types and held to the
// loader elsewhere (internal/desired/schemagen, test/confschema).
const configSchema = "config.json"

type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// host is a fresh namespace with its own state directory.
type host struct {
	t     *testing.T
	ns    string
	dir   string
	state string
}

func newHost(t *testing.T) *host {
	t.Helper()
	h := &host{t: t, ns: nettest.NewNetNS(t), dir: t.TempDir()}
	h.state = filepath.Join(h.dir, "state")
	return h
}

// run runs the binary with args, then the namespace's options.
func (h *host) run(args ...string) result {
	h.t.Helper()
	return h.exec(append(args, "--netns", h.ns, "--state-dir", h.state)...)
}

func (h *host) exec(args ...string) result {
	h.t.Helper()
	c := exec.Command(binary, args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.code = ee.ExitCode()
	} else if err != nil {
		h.t.Fatalf("%s: %v", strings.Join(args, " "), err)
	}
	return r
}

func (h *host) write(name, content string) string {
	h.t.Helper()
	p := filepath.Join(h.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// killTimer stops a safe-apply timer process still waiting when its test
// ends, checking it is the one (its command line names the transaction).
func killTimer(pid int, id string) {
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err == nil && strings.Contains(string(cmdline), id) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}
