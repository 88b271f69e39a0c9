package ipam

import (
	"github.com/netreconcile/netreconcile/internal/model"

	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The multi-process tests run this test binary again as helper processes that allocate into
// a shared registry; the environment variables below say what a helper does.
const (
	helperEnv      = "NETRECONCILE_IPAM_HELPER" // the state directory
	helperOwnerEnv = "NETRECONCILE_IPAM_HELPER_OWNER"
	helperCountEnv = "NETRECONCILE_IPAM_HELPER_COUNT" // allocations to make; 0: until killed
	helperChurnEnv = "NETRECONCILE_IPAM_HELPER_CHURN" // "1": also release some
)

// processPool has room for 8 helpers × 500 allocations and more, in many blocks.
func processPool() Pool {
	return model.DefaultPoolSpec("p", dual("10.2.0.0/16", "fd01:203:405:607::/112"))
}

// TestHelperProcess is not a test: it is the body of the helper processes.
func TestHelperProcess(t *testing.T) {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		t.Skip("helper process of the multi-process tests")
	}
	if err := runHelper(dir); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runHelper prints "ready", waits for its stdin to close, then allocates owners <owner>-<i>,
// printing "alloc <owner> <ipv4> <ipv6>" after each Allocate returns. With churn, every fourth
// round it also releases an earlier owner, printing "releasing <owner>" before and
// "released <owner>" after.
func runHelper(dir string) error {
	ctx := context.Background()
	count, _ := strconv.Atoi(os.Getenv(helperCountEnv))
	owner := os.Getenv(helperOwnerEnv)
	churn := os.Getenv(helperChurnEnv) == "1"
	r, err := Open(dir, []Pool{processPool()}, nil)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return err
	}
	for i := 0; count == 0 || i < count; i++ {
		o := owner + "-" + strconv.Itoa(i)
		a, err := r.Allocate(ctx, "p", o, "eth0")
		if err != nil {
			return err
		}
		fmt.Printf("alloc %s %s %s\n", o, a.IPv4, a.IPv6)
		if churn && i%4 == 3 {
			o := owner + "-" + strconv.Itoa(i-2)
			fmt.Printf("releasing %s\n", o)
			if _, _, err := r.Release(ctx, "p", o, "eth0"); err != nil {
				return err
			}
			fmt.Printf("released %s\n", o)
		}
	}
	return nil
}

type helper struct {
	cmd    *exec.Cmd
	start  io.WriteCloser
	out    *bufio.Reader
	stderr strings.Builder
}

// startHelper starts a helper and waits until it is ready; closing h.start lets it go.
func startHelper(t testing.TB, dir, owner string, count int, churn bool) *helper {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(),
		helperEnv+"="+dir, helperOwnerEnv+"="+owner, helperCountEnv+"="+strconv.Itoa(count))
	if churn {
		cmd.Env = append(cmd.Env, helperChurnEnv+"=1")
	}
	h := &helper{cmd: cmd}
	cmd.Stderr = &h.stderr
	var err error
	if h.start, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	h.out = bufio.NewReader(stdout)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := h.out.ReadString('\n'); line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper did not get ready: %q %v; stderr: %s", line, err, h.stderr.String())
	}
	return h
}

// finish reads the rest of the helper's output, complete lines only, and waits for it to exit.
func (h *helper) finish() ([]string, error) {
	rest, readErr := io.ReadAll(h.out)
	err := h.cmd.Wait()
	if readErr != nil {
		return nil, readErr
	}
	text := string(rest)
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		text = text[:i]
	} else {
		text = ""
	}
	if text == "" {
		return nil, err
	}
	return strings.Split(text, "\n"), err
}

func TestConcurrentProcesses(t *testing.T) {
	const procs = 8
	count := 500
	if testing.Short() {
		count = 50
	}
	dir := t.TempDir()
	helpers := make([]*helper, procs)
	for i := range helpers {
		helpers[i] = startHelper(t, dir, "h"+strconv.Itoa(i), count, false)
	}
	began := time.Now()
	for _, h := range helpers {
		h.start.Close()
	}
	outputs := make([][]string, procs)
	errs := make([]error, procs)
	var wg sync.WaitGroup
	for i, h := range helpers {
		wg.Go(func() { outputs[i], errs[i] = h.finish() })
	}
	wg.Wait()
	elapsed := time.Since(began)

	reported := map[string]string{} // owner -> addresses
	byAddr := map[string]string{}   // address -> owner
	for i, lines := range outputs {
		if errs[i] != nil {
			t.Fatalf("helper %d: %v; stderr: %s", i, errs[i], helpers[i].stderr.String())
		}
		if len(lines) != count {
			t.Errorf("helper %d reported %d allocations, want %d", i, len(lines), count)
		}
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) != 4 || f[0] != "alloc" {
				t.Fatalf("helper %d printed %q", i, l)
			}
			reported[f[1]] = f[2] + " " + f[3]
			for _, a := range f[2:] {
				if o, dup := byAddr[a]; dup {
					t.Errorf("%s handed out to %s and %s", a, o, f[1])
				}
				byAddr[a] = f[1]
			}
		}
	}
	checkRegistry(t, dir, reported, nil)
	t.Logf("%d processes made %d allocations in %v: %.0f allocations/s",
		procs, procs*count, elapsed.Round(time.Millisecond), float64(procs*count)/elapsed.Seconds())
}

// checkRegistry checks that the registry in dir loads, hands out no address twice and holds
// every reported allocation except maybe those in doubt, and that nothing else is in it when
// exact. It returns the number of allocations not reported.
func checkRegistry(t *testing.T, dir string, reported map[string]string, inDoubt map[string]bool) int {
	t.Helper()
	r, err := Open(dir, []Pool{processPool()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.Check(ctx, nil); err != nil {
		t.Fatalf("Check: %v", err)
	}
	list, err := r.List(ctx, "p")
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	listed := map[string]string{}
	seen := map[string]string{}
	for _, a := range list {
		addrs := joinAddrs(a)
		listed[a.Owner] = addrs
		for _, x := range a.Addrs() {
			if o, dup := seen[x.String()]; dup {
				t.Errorf("registry has %s for %s and %s", x, o, a.Owner)
			}
			seen[x.String()] = a.Owner
		}
	}
	for owner, addrs := range reported {
		got, ok := listed[owner]
		switch {
		case !ok && inDoubt[owner]:
		case !ok:
			t.Errorf("reported allocation %s %s is lost", owner, addrs)
		case got != addrs:
			t.Errorf("%s was reported with %s, the registry has %s", owner, addrs, got)
		}
	}
	unreported := 0
	for owner := range listed {
		if _, ok := reported[owner]; !ok {
			unreported++
		}
	}
	if inDoubt == nil && unreported > 0 {
		t.Errorf("registry has %d allocations nobody reported", unreported)
	}
	return unreported
}

func TestCrashSafety(t *testing.T) {
	trials := 100
	if testing.Short() {
		trials = 20
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	reported := map[string]string{}
	allocs, unreported := 0, 0
	for trial := range trials {
		h := startHelper(t, dir, "t"+strconv.Itoa(trial), 0, true)
		h.start.Close()
		time.Sleep(time.Duration(rng.Int64N(int64(25 * time.Millisecond))))
		if err := h.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		lines, err := h.finish()
		if err == nil || !strings.Contains(err.Error(), "killed") {
			t.Fatalf("trial %d: helper ended with %v, not killed; stderr: %s", trial, err, h.stderr.String())
		}
		// A release that was under way when the helper died may or may not have happened.
		inDoubt := map[string]bool{}
		for _, l := range lines {
			f := strings.Fields(l)
			switch f[0] {
			case "alloc":
				reported[f[1]] = f[2] + " " + f[3]
				allocs++
			case "releasing":
				inDoubt[f[1]] = true
			case "released":
				delete(reported, f[1])
				delete(inDoubt, f[1])
			}
		}
		unreported = checkRegistry(t, dir, reported, inDoubt)
		for owner := range inDoubt {
			delete(reported, owner)
		}
		if t.Failed() {
			t.Fatalf("trial %d failed; output:\n%s", trial, strings.Join(lines, "\n"))
		}
	}
	t.Logf("%d trials, %d reported allocations, %d made but not reported (killed before printing)", trials, allocs, unreported)
}
