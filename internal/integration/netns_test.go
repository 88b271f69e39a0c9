package integration

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/nettest"
)

// helperEnv makes TestMain-less re-execution of this test binary run one
// command line inside another process's namespace (see emptyNetnsHelper).
const helperEnv = "NETRECONCILE_TEST_HELPER_ARGS"

// TestEmptyNetnsHelper is not a test: run by TestEmptyNetnsRefused inside a
// fresh namespace (ip netns exec), it runs the command line given in
// helperEnv in-process and prints its exit code and output.
func TestEmptyNetnsHelper(t *testing.T) {
	args := os.Getenv(helperEnv)
	if args == "" {
		t.Skip("helper process only")
	}
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		t.Fatal(err)
	}
	r := nettest.CLI(t, argv...)
	os.Stdout.WriteString("exit " + strconv.Itoa(r.Code) + "\n" + r.Stdout + r.Stderr)
}

// "--netns ''" (a script's unset variable) is an error, never the caller's
// own namespace. The command runs inside a fresh namespace, so that without
// the check it writes there and not to the host.
func TestEmptyNetnsRefused(t *testing.T) {
	ns := nettest.NewNetNS(t)
	state, dir := t.TempDir(), t.TempDir()
	f := nettest.WriteFile(t, dir, "a.yaml", "version: 1\nlinks:\n  nrempty0: {kind: bridge}\n")
	for _, args := range [][]string{
		{"apply", "-c", f, "--state-dir", state, "--netns", ""},
		{"apply", "-c", f, "--state-dir", state, "--netns="},
		{"ipam", "list", "-c", f, "--state-dir", state, "--netns", ""},
	} {
		cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestEmptyNetnsHelper$", "-test.v")
		argv, _ := json.Marshal(args)
		cmd.Env = append(os.Environ(), helperEnv+"="+string(argv))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			t.Fatalf("helper %q: %v\n%s", args, err, out.String())
		}
		if got := out.String(); !strings.Contains(got, "exit 1\n") || !strings.Contains(got, "--netns is empty") {
			t.Errorf("%q: want exit 1 naming the empty --netns, got\n%s", args, got)
		}
		if l := nettest.IP(t, ns, "-o", "link", "show"); strings.Contains(l, "nrempty0") {
			t.Fatalf("%q wrote to the namespace it ran in:\n%s", args, l)
		}
	}
}
