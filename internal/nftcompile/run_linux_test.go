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
