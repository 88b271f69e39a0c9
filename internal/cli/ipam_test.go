package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/netreconcile/netreconcile/internal/ipam"
)

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Run(context.Background(), &Env{Stdout: &out, Stderr: &errb, Getenv: isolatedGetenv}, args)
	return code, out.String(), errb.String()
}

// isolatedGetenv is the environment of a command a test runs in process:
// empty, but for NETRECONCILE_RUN_AS, which keeps root from running the
// command again as the packaged service's user. Without it, on a host with
// the package installed (/var/lib/netreconcile the user netreconcile's),
// root would run the test binary as that user, and a test of the default
// state directory would depend on the machine (TestRootRunsAsServiceUser
// tests that path with a user of its own).
func isolatedGetenv(k string) string {
	if k == "NETRECONCILE_RUN_AS" { // runAsEnv, of runas_linux.go
		return "1"
	}
	return ""
}

// TestIPAMCommand drives `netreconcile ipam` on a state directory without any kernel: the
// common options anywhere among the command's own, help, usage errors and exit codes.
func TestIPAMCommand(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte("version: 1\npools:\n  p:\n    subnets: [10.2.0.0/30]\n    block-size-bits: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	for _, tc := range []struct {
		args       []string
		code       int
		out, errIn string
	}{
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state, "--owner", "pid:1"}, 0, "10.2.0.0\n", ""},
		{[]string{"ipam", "--config=" + conf, "allocate", "--owner", "pid:2", "--state-dir=" + state}, 0, "10.2.0.1\n", ""},
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state, "--owner", "pid:1"}, 0, "10.2.0.0\n", ""},
		{[]string{"ipam", "release", "-c", conf, "--state-dir", state, "--owner", "pid:2"}, 0, "released 10.2.0.1\n", ""},
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state}, ExitUsage, "", "netreconcile ipam allocate: --owner is required"},
		{[]string{"ipam", "frob", "-c", conf, "--state-dir", state}, ExitUsage, "", "netreconcile ipam: unknown command \"frob\"; commands: allocate, release, list, gc\nRun 'netreconcile help ipam' for its options.\n"},
		{[]string{"ipam", "allocate", "-c", conf, "--state-dir", state, "--owner", "pid:3", "--pool", "q"}, ExitError, "", `unknown pool "q"`},
		{[]string{"ipam", "list", "-c", filepath.Join(dir, "missing.yaml"), "--state-dir", state}, ExitError, "", "read config"},
		{[]string{"ipam", "-c"}, ExitUsage, "", "flag needs an argument: -c"},
		{[]string{"ipam"}, ExitUsage, "", "netreconcile ipam: a command is missing: allocate, release, list or gc\nRun 'netreconcile help ipam' for its options.\n"},
		{[]string{"help", "ipam"}, 0, "Usage: netreconcile ipam [OPTIONS] COMMAND", ""},
		{[]string{"help", "ipam", "gc"}, 0, "Usage: netreconcile ipam gc", ""},
		{[]string{"ipam", "help", "release"}, 0, "Usage: netreconcile ipam release", ""},
		{[]string{"ipam", "help", "frob"}, ExitUsage, "", "netreconcile help: no command \"ipam frob\"; run 'netreconcile help' for the list\n"},
		{[]string{"ipam", "gc", "--help"}, 0, "Usage: netreconcile ipam gc", ""},
	} {
		code, out, errs := runCLI(tc.args...)
		if code != tc.code || !strings.HasPrefix(out, tc.out) || !strings.Contains(errs, tc.errIn) || tc.out == "" && out != "" {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s\nwant exit %d, stdout %q, stderr with %q",
				strings.Join(tc.args, " "), code, out, errs, tc.code, tc.out, tc.errIn)
		}
	}
}

type ipamFakeClock struct{ now time.Time }

func (c *ipamFakeClock) Now() time.Time { return c.now }

// TestIPAMOutput drives every ipam command on two pools through Run, on a fake clock: the text
// and JSON outputs, and which errors are the command line's (exit 64) and which the registry's
// (exit 1), told apart by errors.Is, not by their text.
func TestIPAMOutput(t *testing.T) {
	clock := &ipamFakeClock{time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)}
	defer func(c ipam.Clock) { ipamClock = c }(ipamClock)
	ipamClock = clock
	dir := t.TempDir()
	conf := filepath.Join(dir, "nr.yaml")
	if err := os.WriteFile(conf, []byte(`version: 1
pools:
  pods:
    subnets: [{ipv4: 10.2.0.0/29, ipv6: "fd01:203:405:607::/125"}]
    block-size-bits: 2
    reuse-delay: 1m
  links:
    subnets: [192.0.2.0/30]
    block-size-bits: 0
    reuse-delay: 5m
`), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"-c", conf, "--state-dir", filepath.Join(dir, "state")}
	// A process that has exited, for gc to find gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := "pid:" + strconv.Itoa(dead.Process.Pid)

	tests := []struct {
		args    string
		advance time.Duration
		code    int
		want    string // stdout
		wantErr string // in stderr
	}{
		{args: "allocate --pool pods --owner pod-a --iface eth0", want: "10.2.0.0\nfd01:203:405:607::\n"},
		{args: "allocate --pool pods --owner pod-a --iface eth0", want: "10.2.0.0\nfd01:203:405:607::\n"},
		{args: "allocate --pool pods --owner " + deadOwner, want: "10.2.0.1\nfd01:203:405:607::1\n"},
		{args: "allocate --pool links --owner config:link/wg0", advance: time.Hour, want: "192.0.2.0\n"},
		{args: "allocate --pool links --owner config:link/wg1 -o json", want: `{
  "schema_version": 1,
  "allocation": {
    "pool": "links",
    "owner": "config:link/wg1",
    "iface": null,
    "block": 1,
    "ipv4": "192.0.2.1",
    "ipv6": null,
    "allocated_at": "2026-11-22T07:00:00Z"
  },
  "error": null,
  "errors": [],
  "error_count": 0
}
`},
		{args: "release --pool links --owner config:link/wg1", want: "released 192.0.2.1\n"},
		{args: "release --pool links --owner config:link/wg1", want: "owner=config:link/wg1 holds no address in pool links\n"},
		{args: "release --pool links --owner config:link/wg1 --output json", want: "{\n  \"schema_version\": 1,\n  \"released\": [],\n  \"error\": null,\n  \"errors\": [],\n  \"error_count\": 0\n}\n"},
		{args: "list", advance: 90 * time.Second, want: `POOL   BLOCK  IPV4       IPV6                 OWNER            IFACE  AGE
links  0      192.0.2.0  -                    config:link/wg0  -      1m30s
pods   0      10.2.0.0   fd01:203:405:607::   pod-a            eth0   1h1m
pods   0      10.2.0.1   fd01:203:405:607::1  ` + pad(deadOwner, 15) + `  -      1h1m

pool links: 1 addresses allocated, 1 waiting out the reuse delay, 1 of 4 allowed blocks held: 192.0.2.0/32
pool pods: 2 addresses allocated, 0 waiting out the reuse delay, 1 of 2 allowed blocks held: 10.2.0.0/30+fd01:203:405:607::/126
`},
		{args: "gc --free-after 1h --output json", want: `{
  "schema_version": 1,
  "freed": [
    {
      "pool": "pods",
      "owner": "` + deadOwner + `",
      "iface": null,
      "block": 0,
      "ipv4": "10.2.0.1",
      "ipv6": "fd01:203:405:607::1",
      "allocated_at": "2026-11-22T06:00:00Z"
    }
  ],
  "error": null,
  "errors": [],
  "error_count": 0
}
`},
		{args: "gc --output table", want: "freed 0 addresses\n", wantErr: "kept 1 addresses older than 15m0s whose owners gc cannot check (not pid: or netns:)\n"},
		{args: "list --pool links --output json", want: `{
  "schema_version": 1,
  "pools": [
    {
      "pool": "links",
      "usage": {
        "blocks_held": 1,
        "blocks_allowed": 4,
        "addresses": 1,
        "allocated": 1,
        "cooling": 1
      },
      "blocks": [
        {
          "index": 0,
          "ipv4": "192.0.2.0/32",
          "ipv6": null
        }
      ],
      "allocations": [
        {
          "pool": "links",
          "owner": "config:link/wg0",
          "iface": null,
          "block": 0,
          "ipv4": "192.0.2.0",
          "ipv6": null,
          "allocated_at": "2026-11-22T07:00:00Z"
        }
      ]
    }
  ],
  "error": null,
  "errors": [],
  "error_count": 0
}
`},
		{args: "allocate --pool nope --owner x -o json", code: ExitError, wantErr: `unknown pool "nope"`, want: `{
  "schema_version": 1,
  "allocation": null,
  "error": "allocate in pool nope for owner=x: unknown pool \"nope\"",
  "errors": [],
  "error_count": 0
}
`},
		{args: "allocate --owner x", code: ExitUsage, wantErr: "--pool is required: the configuration has pools links, pods"},
		{args: "allocate --pool pods", code: ExitUsage, wantErr: "netreconcile ipam allocate: --owner is required\nRun 'netreconcile help ipam allocate' for its options.\n"},
		{args: "allocate --pool pods --owner x --output yaml", code: ExitUsage, wantErr: `--output must be text or json, not "yaml"`},
		{args: "allocate --pool nope --owner x", code: ExitError, wantErr: `unknown pool "nope"`},
		{args: "allocate --pool pods --owner x extra", code: ExitUsage, wantErr: `netreconcile ipam allocate: unexpected argument "extra"`},
		{args: "list --colour", code: ExitUsage, wantErr: "flag provided but not defined: -colour"},
		{args: "gc --free-after soon", code: ExitUsage, wantErr: `invalid value "soon" for flag -free-after`},
		{args: "gc --free-after -1m", code: ExitUsage, wantErr: "--free-after -1m0s is negative"},
		{args: "frobnicate", code: ExitUsage, wantErr: `netreconcile ipam: unknown command "frobnicate"; commands: allocate, release, list, gc`},
	}
	for _, tt := range tests {
		clock.now = clock.now.Add(tt.advance)
		args := strings.Fields(tt.args)
		code, out, errs := runCLI(append(append([]string{"ipam"}, args[0]), append(args[1:], common...)...)...)
		if code != tt.code || !strings.Contains(errs, tt.wantErr) || tt.wantErr == "" && errs != "" {
			t.Errorf("ipam %s: exit %d, stderr %q; want exit %d, stderr with %q", tt.args, code, errs, tt.code, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, out); diff != "" {
			t.Errorf("ipam %s: stdout (-want +got):\n%s", tt.args, diff)
		}
	}
}

func pad(s string, n int) string { return s + strings.Repeat(" ", max(0, n-len(s))) }

// TestIPAMHelp: each command's help, without a configuration.
func TestIPAMHelp(t *testing.T) {
	for _, tt := range []struct {
		args string
		want []string
	}{
		{"ipam --help", []string{"Usage: netreconcile ipam [OPTIONS] COMMAND [OPTIONS]", "allocate  --owner ID", "Exit status:", "Common options:"}},
		{"ipam help", []string{"Run 'netreconcile help ipam COMMAND'"}},
		{"ipam allocate --help", []string{
			"Usage: netreconcile ipam allocate --owner ID [--pool P] [--iface NAME] [OPTIONS]",
			"--owner ID       the owner (required)",
			"-o, --output FORMAT  text (default) or json",
		}},
		{"ipam release -h", []string{"does nothing and is not an error"}},
		{"ipam list --help", []string{"-o, --output FORMAT  text (default; table is accepted) or json"}},
		{"ipam gc --help", []string{"--free-after D   free only addresses handed out at least D ago"}},
		{"ipam -c /nonexistent gc --help", []string{"Usage: netreconcile ipam gc"}},
	} {
		code, out, errs := runCLI(strings.Fields(tt.args)...)
		if code != ExitOK || errs != "" {
			t.Errorf("%s: exit %d, stderr %q", tt.args, code, errs)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.args, w, out)
			}
		}
	}
}
