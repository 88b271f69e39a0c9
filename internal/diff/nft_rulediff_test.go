package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// TestRuleDiffTurnsHaveIntoWant generates chains (short alphabets, so that
// rules repeat) and checks ruleDiff's ops against two independent oracles:
// played on the kernel's list, in plan order, they give the desired list;
// and the rules they keep number the longest common subsequence of the two
// lists, computed over the whole of both.
func TestRuleDiffTurnsHaveIntoWant(t *testing.T) {
	rng := rand.New(rand.NewPCG(30, 31))
	k := model.NftTableKey{Family: "inet", Name: "t"}
	for round := 0; round < 3000; round++ {
		alpha := 1 + rng.IntN(6)
		gen := func(n int) []string {
			out := make([]string, n)
			for i := range out {
				out[i] = fmt.Sprintf("r%d", rng.IntN(alpha))
			}
			return out
		}
		wantFP, haveFP := gen(rng.IntN(12)), gen(rng.IntN(12))
		if round%3 == 0 && len(wantFP) > 0 {
			// A long shared head and tail around a small change.
			haveFP = slices.Concat(wantFP[:len(wantFP)/2], gen(rng.IntN(3)), wantFP[len(wantFP)/2:])
		}
		c := &model.NftChain{Name: "c"}
		for _, fp := range wantFP {
			c.Rules = append(c.Rules, model.NftRule{Text: fp, Fingerprint: fp})
		}
		var have []model.NftRule
		for j, fp := range haveFP {
			have = append(have, model.NftRule{Text: fp, Fingerprint: fp, Handle: uint64(100 + j)})
		}

		ops := ruleDiff(k, c, have)

		type kr struct {
			fp     string
			handle uint64
		}
		list := make([]kr, len(have))
		for j, h := range have {
			list[j] = kr{h.Fingerprint, h.Handle}
		}
		find := func(h uint64) int {
			return slices.IndexFunc(list, func(x kr) bool { return x.handle == h })
		}
		kept, next := len(have), uint64(1000)
		for _, op := range ops {
			o := op.NFT[0]
			switch o.Op {
			case model.NftDelRule:
				at := find(o.Handle)
				if at < 0 {
					t.Fatalf("round %d: delete of unknown handle %d", round, o.Handle)
				}
				list = slices.Delete(list, at, at+1)
				kept--
			case model.NftReplaceRule:
				at := find(o.Handle)
				if at < 0 {
					t.Fatalf("round %d: replace of unknown handle %d", round, o.Handle)
				}
				list[at].fp = o.Rule.Fingerprint
				kept--
			case model.NftAddRule:
				next++
				at := len(list)
				if o.Before != 0 {
					if at = find(o.Before); at < 0 {
						t.Fatalf("round %d: insert before unknown handle %d", round, o.Before)
					}
				}
				list = slices.Insert(list, at, kr{o.Rule.Fingerprint, next})
			default:
				t.Fatalf("round %d: unexpected op %v", round, o.Op)
			}
		}
		var got []string
		for _, x := range list {
			got = append(got, x.fp)
		}
		if !slices.Equal(got, wantFP) && !(len(got) == 0 && len(wantFP) == 0) {
			t.Fatalf("round %d: have %v, want %v: the ops give %v", round, haveFP, wantFP, got)
		}
		if l := naiveLCS(wantFP, haveFP); kept != l {
			t.Fatalf("round %d: have %v, want %v: %d rules kept, the longest common subsequence is %d", round, haveFP, wantFP, kept, l)
		}
	}
}

// naiveLCS is the textbook recursion, memoised: the oracle for how many
// rules a diff can keep.
func naiveLCS(a, b []string) int {
	memo := map[[2]int]int{}
	var f func(i, j int) int
	f = func(i, j int) int {
		if i == len(a) || j == len(b) {
			return 0
		}
		if v, ok := memo[[2]int{i, j}]; ok {
			return v
		}
		v := max(f(i+1, j), f(i, j+1))
		if a[i] == b[j] {
			v = max(v, 1+f(i+1, j+1))
		}
		memo[[2]int{i, j}] = v
		return v
	}
	return f(0, 0)
}
