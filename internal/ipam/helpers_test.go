package ipam

import (
	"github.com/netreconcile/netreconcile/internal/model"

	"context"
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func v4(prefix string) Subnet { return Subnet{IPv4: netip.MustParsePrefix(prefix)} }
func v6(prefix string) Subnet { return Subnet{IPv6: netip.MustParsePrefix(prefix)} }
func dual(p4, p6 string) Subnet {
	return Subnet{IPv4: netip.MustParsePrefix(p4), IPv6: netip.MustParsePrefix(p6)}
}

func testPool(name string, blockBits int, delay time.Duration, subnets ...Subnet) Pool {
	p := model.DefaultPoolSpec(name, subnets...)
	p.BlockSizeBits = blockBits
	p.ReuseDelay = delay
	return p
}

func openTest(t testing.TB, dir string, clock Clock, pools ...Pool) *Registry {
	t.Helper()
	r, err := Open(dir, pools, clock)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return r
}

// step is one operation of a scripted test and what it must give: the allocated addresses
// separated by spaces, or "error: <text the error contains>".
type step struct {
	op    string // alloc, release, advance
	owner string
	iface string
	d     time.Duration
	want  string
}

func play(t *testing.T, r *Registry, clock *fakeClock, pool string, steps []step) {
	t.Helper()
	ctx := context.Background()
	for i, s := range steps {
		var got string
		switch s.op {
		case "alloc":
			a, err := r.Allocate(ctx, pool, s.owner, s.iface)
			got = joinAddrs(a)
			if err != nil {
				got = "error: " + err.Error()
			}
		case "release":
			a, ok, err := r.Release(ctx, pool, s.owner, s.iface)
			switch {
			case err != nil:
				got = "error: " + err.Error()
			case ok:
				got = joinAddrs(a)
			}
		case "advance":
			clock.Advance(s.d)
		default:
			t.Fatalf("step %d: unknown op %q", i, s.op)
		}
		if want, isErr := strings.CutPrefix(s.want, "error: "); isErr && strings.HasPrefix(got, "error: ") {
			if !strings.Contains(got, want) {
				t.Fatalf("step %d: %s %s: got %q, want an error containing %q", i, s.op, s.owner, got, want)
			}
			continue
		}
		if got != s.want {
			t.Fatalf("step %d: %s %s: got %q, want %q", i, s.op, s.owner, got, s.want)
		}
	}
}

func mustBlocks(t *testing.T, r *Registry, pool string) []string {
	t.Helper()
	bs, err := r.HeldBlocks(context.Background(), pool)
	if err != nil {
		t.Fatalf("HeldBlocks: %v", err)
	}
	var out []string
	for _, b := range bs {
		out = append(out, b.describe())
	}
	return out
}

func netip6(s string) netip.Addr { return netip.MustParseAddr(s) }

func contains(err error, text string) bool { return err != nil && strings.Contains(err.Error(), text) }

func readFileIfExists(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return data, err
}

// joinAddrs writes an allocation's addresses separated by spaces, IPv4 first.
func joinAddrs(a Allocation) string {
	var s []string
	for _, x := range a.Addrs() {
		s = append(s, x.String())
	}
	return strings.Join(s, " ")
}
