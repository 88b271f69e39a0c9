package ipam

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCLI(t *testing.T) {
	dir, clock := t.TempDir(), newFakeClock()
	pools := []Pool{
		testPool("pods", 2, time.Minute, dual("10.2.0.0/29", "fd01:203:405:607::/125")),
		testPool("links", 0, 5*time.Minute, v4("192.0.2.0/30")),
	}
	// A process that has exited, for gc to find gone.
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	deadOwner := "pid:" + strconv.Itoa(dead.Process.Pid)

	tests := []struct {
		args    string
		advance time.Duration
		want    string // stdout
		wantErr string
	}{
		{args: "allocate --pool pods --owner pod-a --iface eth0", want: "10.2.0.0\nfd01:203:405:607::\n"},
		{args: "allocate --pool pods --owner pod-a --iface eth0", want: "10.2.0.0\nfd01:203:405:607::\n"},
		{args: "allocate --pool pods --owner " + deadOwner, want: "10.2.0.1\nfd01:203:405:607::1\n"},
		{args: "allocate --pool links --owner config:link/wg0", advance: time.Hour, want: "192.0.2.0\n"},
		{args: "allocate --pool links --owner config:link/wg1 --output json", want: `{
  "pool": "links",
  "owner": "config:link/wg1",
  "block": 1,
  "ipv4": "192.0.2.1",
  "allocatedAt": "2026-11-22T07:00:00Z"
}
`},
		{args: "release --pool links --owner config:link/wg1", want: "released 192.0.2.1\n"},
		{args: "release --pool links --owner config:link/wg1", want: "owner=config:link/wg1 holds no address in pool links\n"},
		{args: "list", advance: 90 * time.Second, want: `POOL   BLOCK  IPV4       IPV6                 OWNER            IFACE  AGE
pods   0      10.2.0.0   fd01:203:405:607::   pod-a            eth0   1h1m
pods   0      10.2.0.1   fd01:203:405:607::1  ` + pad(deadOwner, 15) + `  -      1h1m
links  0      192.0.2.0  -                    config:link/wg0  -      1m30s

pool pods: 2 addresses allocated, 0 waiting out the reuse delay, 1 of 2 allowed blocks held: 10.2.0.0/30+fd01:203:405:607::/126
pool links: 1 addresses allocated, 1 waiting out the reuse delay, 1 of 4 allowed blocks held: 192.0.2.0/32
`},
		{args: "gc --free-after 1h --output json", want: `{
  "freed": [
    {
      "pool": "pods",
      "owner": "` + deadOwner + `",
      "block": 0,
      "ipv4": "10.2.0.1",
      "ipv6": "fd01:203:405:607::1",
      "allocatedAt": "2026-11-22T06:00:00Z"
    }
  ]
}
`},
		{args: "gc", want: "freed 0 addresses\n"},
		{args: "list --pool links --output json", want: `{
  "pools": [
    {
      "pool": "links",
      "usage": {
        "pool": "links",
        "blocksHeld": 1,
        "blocksAllowed": 4,
        "addresses": 1,
        "allocated": 1,
        "cooling": 1
      },
      "blocks": [
        {
          "pool": "links",
          "index": 0,
          "ipv4": "192.0.2.0/32"
        }
      ],
      "allocations": [
        {
          "pool": "links",
          "owner": "config:link/wg0",
          "block": 0,
          "ipv4": "192.0.2.0",
          "allocatedAt": "2026-11-22T07:00:00Z"
        }
      ]
    }
  ]
}
`},
		{args: "allocate --owner x", wantErr: "--pool is required: the configuration has pools pods, links"},
		{args: "allocate --pool pods", wantErr: "ipam allocate: --owner is required"},
		{args: "allocate --pool pods --owner x --output yaml", wantErr: `--output "yaml": use text or json`},
		{args: "allocate --pool nope --owner x", wantErr: `unknown pool "nope"`},
		{args: "allocate --pool pods --owner x extra", wantErr: `unexpected argument "extra" (see 'netreconcile ipam allocate --help')`},
		{args: "list --colour", wantErr: "flag provided but not defined: -colour"},
		{args: "gc --free-after soon", wantErr: `invalid value "soon" for flag -free-after`},
		{args: "frobnicate", wantErr: `ipam: unknown command "frobnicate"; commands: allocate, release, list, gc`},
		{args: "", wantErr: "ipam: missing command"},
	}
	for _, tt := range tests {
		clock.Advance(tt.advance)
		var stdout, stderr bytes.Buffer
		err := runCLI(context.Background(), strings.Fields(tt.args), &stdout, &stderr, dir, pools, clock)
		if tt.wantErr != "" {
			if !contains(err, tt.wantErr) {
				t.Errorf("ipam %s: error %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("ipam %s: %v", tt.args, err)
		}
		if diff := cmp.Diff(tt.want, stdout.String()); diff != "" {
			t.Errorf("ipam %s: stdout (-want +got):\n%s", tt.args, diff)
		}
	}
}

func pad(s string, n int) string { return s + strings.Repeat(" ", max(0, n-len(s))) }

func TestCLIHelp(t *testing.T) {
	for _, tt := range []struct {
		args string
		want []string
	}{
		{"--help", []string{"usage: netreconcile ipam <command> [flags]", "kept in\n  /state/ipam\n", "allocate  give an owner an address"}},
		{"help", []string{"Run 'netreconcile ipam <command> --help'"}},
		{"allocate --help", []string{
			"usage: netreconcile ipam allocate [--pool P] --owner ID [--iface NAME] [--output text|json]",
			"netns:/run/netns/blue  a network namespace",
			"  --owner ID       the owner ID (required)",
			"  --output FORMAT  output FORMAT: text or json (default text)",
		}},
		{"release -h", []string{"Releasing an address that is not held does nothing"}},
		{"list --help", []string{"  --output FORMAT  output FORMAT: table or json (default table)"}},
		{"gc --help", []string{"  --free-after D   free only addresses handed out at least D ago, e.g. 30m (default 15m0s)"}},
	} {
		var stdout bytes.Buffer
		if err := runCLI(context.Background(), strings.Fields(tt.args), &stdout, &stdout, "/state", nil, newFakeClock()); err != nil {
			t.Errorf("ipam %s: %v", tt.args, err)
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout.String(), w) {
				t.Errorf("ipam %s: output lacks %q:\n%s", tt.args, w, stdout.String())
			}
		}
	}
}

func TestCLIGCNote(t *testing.T) {
	dir, clock := t.TempDir(), newFakeClock()
	pools := []Pool{testPool("p", 5, time.Minute, v4("10.0.0.0/24"))}
	r := openTest(t, dir, clock, pools...)
	if _, err := r.Allocate(context.Background(), "p", "container-1234", "eth0"); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	var stdout, stderr bytes.Buffer
	if err := runCLI(context.Background(), []string{"gc"}, &stdout, &stderr, dir, pools, clock); err != nil {
		t.Fatal(err)
	}
	want := "kept 1 addresses older than 15m0s whose owners gc cannot check (not pid: or netns:)\n"
	if stdout.String() != "freed 0 addresses\n" || stderr.String() != want {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}

func TestOwnerAlive(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/netns"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		owner string
		want  bool
	}{
		{"pid:" + strconv.Itoa(os.Getpid()), true},
		{"pid:1", true},
		{"pid:" + strconv.Itoa(dead.Process.Pid), false},
		{"pid:x", true},
		{"netns:" + file, true},
		{"netns:" + file + "-gone", false},
		{ConfigOwner("link", "wg0"), true},
		{"0123456789abcdef", true},
	} {
		if got := OwnerAlive(tt.owner); got != tt.want {
			t.Errorf("OwnerAlive(%q) = %v, want %v", tt.owner, got, tt.want)
		}
	}
}
