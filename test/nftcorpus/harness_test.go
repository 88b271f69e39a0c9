package nftcorpus

import (
	"errors"
	"testing"
	"time"
)

// NftTakes ends when nft refuses every rule of a family. The loop that
// runs the rules taken again, together, ran forever once none was left
// (TestNftDefectRefusedRulesAreRefused hung in CI until its timeout).
func TestNftTakesEndsWhenEveryRuleIsRefused(t *testing.T) {
	cases := []Case{
		{Family: "inet", Chain: "in", Rule: "a"},
		{Family: "inet", Chain: "in", Rule: "b"},
		{Family: "inet", Chain: "out", Rule: "c"},
	}
	// nft refuses every script, placing no error: the harness splits
	// the rules until each is refused alone.
	refuseAll := func(scripts []string) ([]byte, int, error) { return nil, 0, errors.New("refused") }
	checkNone := func(scripts []string) ([]bool, error) { return make([]bool, len(scripts)), nil }
	type result struct {
		took []bool
		err  error
	}
	done := make(chan result, 1)
	go func() {
		took, _, err := NftTakes("inet", cases, refuseAll, checkNone)
		done <- result{took, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		for i, took := range r.took {
			if took {
				t.Errorf("case %d taken, though nft refused every script", i)
			}
		}
	case <-time.After(time.Minute):
		t.Fatal("NftTakes did not end when every rule was refused")
	}
}
