package nftcompile

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// root's compile of one part runs nft alone (runDirect): an nft that fails
// at once, before it reads its script, is reported with what it said,
// never taken for a compile.
func TestNftDirectReportsWhatNftSaid(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("NETRECONCILE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("this test needs root and NETRECONCILE_REQUIRE_PRIVILEGED=1 requires it to run")
		}
		t.Skip("needs root (nft alone is root's path)")
	}
	prog := filepath.Join(t.TempDir(), "nft")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'nftables v0'; exit 0; fi\necho 'cannot load libnftables' >&2\nexit 3\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := &model.NftTable{Family: "inet", Name: "t", Chains: []model.NftChain{{Name: "c", Rules: []model.NftRule{{Text: "accept"}}}}}
	req := &Request{Rules: []Rule{{Table: tb, Chain: &tb.Chains[0], Rule: &tb.Chains[0].Rules[0]}}}
	err := (&Nft{Path: prog}).Compile(context.Background(), req)
	if err == nil || !strings.Contains(err.Error(), "cannot load libnftables") {
		t.Fatalf("compile: %v", err)
	}
	if testing.Verbose() {
		t.Log(err)
	}
	if tb.Chains[0].Rules[0].Compiled != nil {
		t.Error("a rule was taken as compiled")
	}
}

// A compile whose time runs out while nft runs alone ends with that, not
// with a refusal of the rules.
func TestNftDirectCancelled(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("NETRECONCILE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("this test needs root and NETRECONCILE_REQUIRE_PRIVILEGED=1 requires it to run")
		}
		t.Skip("needs root (nft alone is root's path)")
	}
	prog := filepath.Join(t.TempDir(), "nft")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'nftables v0'; exit 0; fi\ncat >/dev/null\nexec sleep 60\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	tb := &model.NftTable{Family: "inet", Name: "t", Chains: []model.NftChain{{Name: "c", Rules: []model.NftRule{{Text: "accept"}}}}}
	req := &Request{Rules: []Rule{{Table: tb, Chain: &tb.Chains[0], Rule: &tb.Chains[0].Rules[0]}}}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := (&Nft{Path: prog}).Compile(ctx, req)
	var refused Errors
	if err == nil || errors.As(err, &refused) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("compile: %v", err)
	}
}

// logNft writes an nft that logs each start, as a line with its pid, then
// runs /usr/sbin/nft: the compile's namespace user (nobody, for root) can
// run it and append to the log.
func logNft(t *testing.T) (prog, log string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("NETRECONCILE_REQUIRE_PRIVILEGED") == "1" {
			t.Fatal("this test needs root and NETRECONCILE_REQUIRE_PRIVILEGED=1 requires it to run")
		}
		t.Skip("needs root (nft alone is root's path)")
	}
	if _, err := os.Stat(DefaultNft); err != nil {
		t.Skipf("%s: %v", DefaultNft, err)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	log = filepath.Join(dir, "starts")
	if err := os.WriteFile(log, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is masked by the umask.
	if err := os.Chmod(log, 0o666); err != nil {
		t.Fatal(err)
	}
	prog = filepath.Join(dir, "nft")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then exec " + DefaultNft + " --version; fi\necho $$ >>" + log + "\nexec " + DefaultNft + " \"$@\"\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return prog, log
}

// starts are the pids a logNft logged.
func starts(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

func oneRule(text string) (*model.NftTable, *Request) {
	tb := &model.NftTable{Family: "inet", Name: "t", Chains: []model.NftChain{{Name: "c", Rules: []model.NftRule{{Text: text}}}}}
	return tb, &Request{Rules: []Rule{{Table: tb, Chain: &tb.Chains[0], Rule: &tb.Chains[0].Rules[0]}}}
}

// The nft Prestart starts is the one the next compile of one script runs:
// one nft started in all, and the rule compiled as without it.
func TestNftPrestartTakenByTheCompile(t *testing.T) {
	prog, log := logNft(t)
	n := &Nft{Path: prog}
	tb, req := oneRule("tcp dport 22 accept")
	if err := n.Compile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	want := tb.Chains[0].Rules[0].Compiled
	if want == nil || len(starts(t, log)) != 1 {
		t.Fatalf("without Prestart: compiled %v, %d nft started", want, len(starts(t, log)))
	}
	n.Prestart()
	tb, req = oneRule("tcp dport 22 accept")
	if err := n.Compile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := tb.Chains[0].Rules[0].Compiled
	if got == nil || got.Fingerprint != want.Fingerprint {
		t.Fatalf("with Prestart: compiled %+v, want %+v", got, want)
	}
	if s := starts(t, log); len(s) != 2 {
		t.Fatalf("nft started %d times for two compiles, one after Prestart", len(s))
	}
	spareMu.Lock()
	left := spare
	spareMu.Unlock()
	if left != nil {
		t.Error("the compile left the nft Prestart started")
	}
	// A refusal comes back from it as from a new nft.
	n.Prestart()
	_, req = oneRule("tcp dport 99999 accept")
	var refused Errors
	if err := n.Compile(context.Background(), req); !errors.As(err, &refused) {
		t.Fatalf("a rule nft refuses, after Prestart: %v", err)
	}
}

// An nft Prestart started that no compile takes ends with DropSpare, and
// one of another program is not taken by a compile.
func TestNftPrestartDropped(t *testing.T) {
	prog, log := logNft(t)
	n := &Nft{Path: prog}
	n.Prestart()
	// A compile with another program starts its own.
	other := &Nft{}
	tb, req := oneRule("accept")
	if err := other.Compile(context.Background(), req); err != nil || tb.Chains[0].Rules[0].Compiled == nil {
		t.Fatalf("compile with %s: %v", DefaultNft, err)
	}
	n.DropSpare()
	var pid string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s := starts(t, log); len(s) == 1 {
			pid = s[0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Prestart started no nft")
		}
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat("/proc/" + pid); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nft %s Prestart started still runs after DropSpare", pid)
		}
	}
	spareMu.Lock()
	left := spare
	spareMu.Unlock()
	if left != nil {
		t.Error("DropSpare left the spare")
	}
}

// Settle returns only once the nft Prestart started is gone, at once after
// a Prestart: a command that returns leaves no nft and no fork of nft in
// flight (whose copy of the command's open files kept a state directory's
// mount busy: TestLedgerOnFullAndReadOnlyStateDir failed its umount 3 times
// in 8 without it).
func TestNftSettleLeavesNoNft(t *testing.T) {
	prog, log := logNft(t)
	n := &Nft{Path: prog}
	// A spare ended before its shell wrote its pid leaves no trace: the
	// loop goes on until five did (on a busy machine, all of the first
	// five may end that early).
	for i := 0; i < 200 && len(starts(t, log)) < 5; i++ {
		n.Prestart()
		n.Settle()
		spareMu.Lock()
		left := spare
		spareMu.Unlock()
		if left != nil {
			t.Fatal("Settle left the spare")
		}
		for _, pid := range starts(t, log) {
			if _, err := os.Stat("/proc/" + pid); !os.IsNotExist(err) {
				t.Fatalf("nft %s that Prestart started still runs after Settle", pid)
			}
		}
	}
	if len(starts(t, log)) == 0 {
		t.Error("Prestart started no nft: the test proves nothing")
	}
}
