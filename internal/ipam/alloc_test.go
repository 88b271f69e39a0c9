package ipam

import (
	"github.com/netreconcile/netreconcile/internal/model"

	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestAllocate(t *testing.T) {
	tests := []struct {
		name  string
		pool  Pool
		steps []step
	}{{
		name: "next after last, then wrap without immediate reuse",
		pool: testPool("p", 2, 0, v4("10.0.0.0/30")),
		steps: []step{
			{op: "alloc", owner: "a", want: "10.0.0.0"},
			{op: "alloc", owner: "b", want: "10.0.0.1"},
			{op: "alloc", owner: "c", want: "10.0.0.2"},
			{op: "release", owner: "b", want: "10.0.0.1"},
			{op: "alloc", owner: "d", want: "10.0.0.3"},
			{op: "alloc", owner: "e", want: "10.0.0.1"},
			{op: "alloc", owner: "f", want: "error: pool exhausted"},
			{op: "release", owner: "a", want: "10.0.0.0"},
			{op: "release", owner: "c", want: "10.0.0.2"},
			{op: "alloc", owner: "g", want: "10.0.0.2"},
			{op: "alloc", owner: "h", want: "10.0.0.0"},
		},
	}, {
		name: "released address waits the reuse delay",
		pool: testPool("p", 1, time.Minute, v4("10.0.0.0/31")),
		steps: []step{
			{op: "alloc", owner: "a", want: "10.0.0.0"},
			{op: "alloc", owner: "b", want: "10.0.0.1"},
			{op: "release", owner: "a", want: "10.0.0.0"},
			{op: "alloc", owner: "c", want: "error: pool exhausted"},
			{op: "advance", d: time.Minute - time.Nanosecond},
			{op: "alloc", owner: "c", want: "error: pool exhausted"},
			{op: "advance", d: time.Nanosecond},
			{op: "alloc", owner: "c", want: "10.0.0.0"},
		},
	}, {
		name: "cooling addresses are skipped, not waited for",
		pool: testPool("p", 2, time.Minute, v4("10.0.0.0/30")),
		steps: []step{
			{op: "alloc", owner: "a", want: "10.0.0.0"},
			{op: "alloc", owner: "b", want: "10.0.0.1"},
			{op: "alloc", owner: "c", want: "10.0.0.2"},
			{op: "alloc", owner: "d", want: "10.0.0.3"},
			{op: "release", owner: "b", want: "10.0.0.1"},
			{op: "release", owner: "c", want: "10.0.0.2"},
			{op: "advance", d: 30 * time.Second},
			{op: "release", owner: "a", want: "10.0.0.0"},
			{op: "advance", d: 30 * time.Second},
			{op: "alloc", owner: "e", want: "10.0.0.1"},
			{op: "alloc", owner: "f", want: "10.0.0.2"},
			{op: "alloc", owner: "g", want: "error: pool exhausted"},
		},
	}, {
		name: "same owner and interface get the same address",
		pool: testPool("p", 5, time.Minute, v4("10.0.0.0/24")),
		steps: []step{
			{op: "alloc", owner: "a", iface: "eth0", want: "10.0.0.0"},
			{op: "alloc", owner: "a", iface: "eth0", want: "10.0.0.0"},
			{op: "alloc", owner: "a", iface: "eth1", want: "10.0.0.1"},
			{op: "alloc", owner: "a", want: "10.0.0.2"},
			{op: "alloc", owner: "b", iface: "eth0", want: "10.0.0.3"},
			{op: "alloc", owner: "a", iface: "eth1", want: "10.0.0.1"},
			{op: "release", owner: "a", iface: "eth1", want: "10.0.0.1"},
			{op: "release", owner: "a", iface: "eth1", want: ""},
			{op: "alloc", owner: "a", iface: "eth1", want: "10.0.0.4"},
		},
	}, {
		name: "dual-stack pairs share the offset",
		pool: testPool("p", 1, 0, dual("10.2.0.0/30", "fd01:203:405:607::/126")),
		steps: []step{
			{op: "alloc", owner: "a", want: "10.2.0.0 fd01:203:405:607::"},
			{op: "alloc", owner: "b", want: "10.2.0.1 fd01:203:405:607::1"},
			{op: "alloc", owner: "c", want: "10.2.0.2 fd01:203:405:607::2"},
			{op: "alloc", owner: "d", want: "10.2.0.3 fd01:203:405:607::3"},
			{op: "alloc", owner: "e", want: "error: pool exhausted"},
		},
	}, {
		name: "IPv6 only",
		pool: testPool("p", 5, 0, v6("fd00::/64")),
		steps: []step{
			{op: "alloc", owner: "a", want: "fd00::"},
			{op: "alloc", owner: "b", want: "fd00::1"},
		},
	}, {
		name: "single-address blocks",
		pool: testPool("p", 0, 0, v4("192.0.2.0/31")),
		steps: []step{
			{op: "alloc", owner: "a", want: "192.0.2.0"},
			{op: "alloc", owner: "b", want: "192.0.2.1"},
			{op: "alloc", owner: "c", want: "error: pool exhausted"},
		},
	}, {
		name: "bad owner and interface",
		pool: testPool("p", 5, 0, v4("10.0.0.0/24")),
		steps: []step{
			{op: "alloc", owner: "", want: "error: owner \"\""},
			{op: "alloc", owner: "a b", want: "error: owner \"a b\""},
			{op: "alloc", owner: "a", iface: "eth0:1", want: "error: interface name"},
			{op: "alloc", owner: "a", iface: "a-very-long-name", want: "error: interface name"},
			{op: "release", owner: "a\n", want: "error: owner"},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			r := openTest(t, t.TempDir(), clock, tt.pool)
			play(t, r, clock, tt.pool.Name, tt.steps)
		})
	}
}

func TestAllocateSurvivesReopen(t *testing.T) {
	dir, clock := t.TempDir(), newFakeClock()
	p := testPool("p", 2, time.Minute, dual("10.0.0.0/29", "fd00::/125"))
	play(t, openTest(t, dir, clock, p), clock, "p", []step{
		{op: "alloc", owner: "a", iface: "eth0", want: "10.0.0.0 fd00::"},
		{op: "alloc", owner: "b", want: "10.0.0.1 fd00::1"},
		{op: "release", owner: "b", want: "10.0.0.1 fd00::1"},
	})
	// A new Registry (another process) sees the same owners, cooling address and last one.
	play(t, openTest(t, dir, clock, p), clock, "p", []step{
		{op: "alloc", owner: "a", iface: "eth0", want: "10.0.0.0 fd00::"},
		{op: "alloc", owner: "c", want: "10.0.0.2 fd00::2"},
		{op: "alloc", owner: "d", want: "10.0.0.3 fd00::3"},
		{op: "alloc", owner: "e", want: "10.0.0.4 fd00::4"},
	})
}

func TestBlocks(t *testing.T) {
	ctx := context.Background()
	t.Run("carved across subnets in order, lowest first", func(t *testing.T) {
		p := testPool("p", 2, 0, v4("10.0.0.0/29"), v4("10.1.0.0/30"), v4("10.2.0.0/29"))
		r := openTest(t, t.TempDir(), newFakeClock(), p)
		var got []string
		for i := range 20 {
			a, err := r.Allocate(ctx, "p", "o"+string(rune('a'+i)), "")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, a.IPv4.String())
		}
		want := []string{
			"10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5", "10.0.0.6", "10.0.0.7",
			"10.1.0.0", "10.1.0.1", "10.1.0.2", "10.1.0.3",
			"10.2.0.0", "10.2.0.1", "10.2.0.2", "10.2.0.3", "10.2.0.4", "10.2.0.5", "10.2.0.6", "10.2.0.7",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("addresses (-want +got):\n%s", diff)
		}
		wantBlocks := []string{"10.0.0.0/30", "10.0.0.4/30", "10.1.0.0/30", "10.2.0.0/30", "10.2.0.4/30"}
		if diff := cmp.Diff(wantBlocks, mustBlocks(t, r, "p")); diff != "" {
			t.Errorf("held blocks (-want +got):\n%s", diff)
		}
		if _, err := r.Allocate(ctx, "p", "last", ""); !errors.Is(err, ErrPoolExhausted) {
			t.Errorf("Allocate in a full pool: %v, want ErrPoolExhausted", err)
		}
	})

	t.Run("dual-stack pairs by index, as in Coil", func(t *testing.T) {
		p := model.DefaultPoolSpec("p", dual("10.2.0.0/16", "fd01:203:405:607::/112"))
		d, err := compile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			index uint64
			want  string
		}{
			{0, "10.2.0.0/27+fd01:203:405:607::/123"},
			{1, "10.2.0.32/27+fd01:203:405:607::20/123"},
			{16, "10.2.2.0/27+fd01:203:405:607::200/123"}, // Coil's AddressBlock example
			{2047, "10.2.255.224/27+fd01:203:405:607::ffe0/123"},
		} {
			v4, v6 := d.layout.block(tt.index)
			if got := (Block{IPv4: v4, IPv6: v6}).describe(); got != tt.want {
				t.Errorf("block %d = %s, want %s", tt.index, got, tt.want)
			}
		}
		if d.layout.total != 2048 {
			t.Errorf("%d blocks, want 2048", d.layout.total)
		}
	})

	t.Run("IPv6 blocks beyond 64 bits of index", func(t *testing.T) {
		d, err := compile(testPool("p", 32, 0, v6("2001:db8::/64")))
		if err != nil {
			t.Fatal(err)
		}
		v4, v6 := d.layout.block(d.layout.total - 1)
		if v4.IsValid() || v6.String() != "2001:db8::ffff:ffff:0:0/96" {
			t.Errorf("last block = %v %v", v4, v6)
		}
		index, off, ok := d.layout.locate(netip6("2001:db8::ffff:ffff:0:5"))
		if !ok || index != d.layout.total-1 || off != 5 {
			t.Errorf("locate = %d %d %v", index, off, ok)
		}
	})

	t.Run("given back when empty", func(t *testing.T) {
		clock := newFakeClock()
		p := testPool("p", 1, time.Minute, v4("10.0.0.0/29"))
		r := openTest(t, t.TempDir(), clock, p)
		play(t, r, clock, "p", []step{
			{op: "alloc", owner: "a", want: "10.0.0.0"},
			{op: "alloc", owner: "b", want: "10.0.0.1"},
			{op: "alloc", owner: "c", want: "10.0.0.2"},
		})
		if diff := cmp.Diff([]string{"10.0.0.0/31", "10.0.0.2/31"}, mustBlocks(t, r, "p")); diff != "" {
			t.Fatalf("held blocks (-want +got):\n%s", diff)
		}
		play(t, r, clock, "p", []step{{op: "release", owner: "c", want: "10.0.0.2"}})
		if diff := cmp.Diff([]string{"10.0.0.0/31"}, mustBlocks(t, r, "p")); diff != "" {
			t.Fatalf("held blocks after releasing c (-want +got):\n%s", diff)
		}
		play(t, r, clock, "p", []step{
			{op: "release", owner: "a", want: "10.0.0.0"},
			{op: "release", owner: "b", want: "10.0.0.1"},
		})
		if got := mustBlocks(t, r, "p"); len(got) != 0 {
			t.Fatalf("held blocks after releasing all: %v", got)
		}
		// Block 0 comes back first, but its addresses still wait out the reuse delay, and
		// so does the one in block 1.
		play(t, r, clock, "p", []step{
			{op: "alloc", owner: "d", want: "10.0.0.3"},
			{op: "alloc", owner: "e", want: "10.0.0.4"},
		})
		if diff := cmp.Diff([]string{"10.0.0.2/31", "10.0.0.4/31"}, mustBlocks(t, r, "p")); diff != "" {
			t.Fatalf("held blocks (-want +got):\n%s", diff)
		}
	})

	t.Run("allowed indexes", func(t *testing.T) {
		clock := newFakeClock()
		p := testPool("p", 1, 0, v4("10.0.0.0/29"))
		p.AllowedBlocks = []IndexRange{{First: 3, Last: 3}, {First: 1, Last: 1}}
		dir := t.TempDir()
		play(t, openTest(t, dir, clock, p), clock, "p", []step{
			{op: "alloc", owner: "a", want: "10.0.0.2"},
			{op: "alloc", owner: "b", want: "10.0.0.3"},
			{op: "alloc", owner: "c", want: "10.0.0.6"},
			{op: "alloc", owner: "d", want: "10.0.0.7"},
			{op: "alloc", owner: "e", want: "error: no free address in the blocks this host may hold (2)"},
		})
		// Block 3 no longer allowed: its allocations stay, new ones go to newly allowed blocks.
		p.AllowedBlocks = []IndexRange{{First: 0, Last: 1}}
		r := openTest(t, dir, clock, p)
		play(t, r, clock, "p", []step{
			{op: "alloc", owner: "c", want: "10.0.0.6"},
			{op: "alloc", owner: "f", want: "10.0.0.0"},
			{op: "release", owner: "d", want: "10.0.0.7"},
			{op: "alloc", owner: "g", want: "10.0.0.1"},
			{op: "alloc", owner: "h", want: "error: pool exhausted"},
		})
		if diff := cmp.Diff([]string{"10.0.0.0/31", "10.0.0.2/31", "10.0.0.6/31"}, mustBlocks(t, r, "p")); diff != "" {
			t.Fatalf("held blocks (-want +got):\n%s", diff)
		}
	})
}

func TestPoolChange(t *testing.T) {
	ctx := context.Background()
	base := testPool("p", 2, 0, v4("10.0.0.0/30"), v4("10.1.0.0/30"))
	tests := []struct {
		name    string
		held    []string // owners allocated with base before the change
		change  func(Pool) Pool
		wantErr string // of Allocate and Check with the changed pool; "" for none
		want    string // address of the next allocation when accepted
	}{{
		name:    "remove a subnet with a held block",
		held:    []string{"a", "b", "c", "d", "e"},
		change:  func(p Pool) Pool { p.Subnets = p.Subnets[:1]; return p },
		wantErr: "block 1 (10.1.0.0/30) is held, but the new subnets have no block 1",
	}, {
		name:    "replace the first subnet",
		held:    []string{"a"},
		change:  func(p Pool) Pool { p.Subnets = []Subnet{v4("10.9.0.0/30"), v4("10.1.0.0/30")}; return p },
		wantErr: "block 0 (10.0.0.0/30) is held, but the new subnets have block 0 at 10.9.0.0/30",
	}, {
		name:    "insert a subnet before held blocks",
		held:    []string{"a", "b", "c", "d", "e"},
		change:  func(p Pool) Pool { p.Subnets = []Subnet{p.Subnets[0], v4("10.5.0.0/30"), p.Subnets[1]}; return p },
		wantErr: "block 1 (10.1.0.0/30) is held, but the new subnets have block 1 at 10.5.0.0/30",
	}, {
		name:    "change the block size",
		held:    []string{"a"},
		change:  func(p Pool) Pool { p.BlockSizeBits = 1; return p },
		wantErr: "blockSizeBits cannot change from 2 to 1 while blocks are held (1)",
	}, {
		name:   "change the block size when nothing is held",
		change: func(p Pool) Pool { p.BlockSizeBits = 1; return p },
		want:   "10.0.0.0",
	}, {
		name:   "remove a subnet without held blocks",
		held:   []string{"a"},
		change: func(p Pool) Pool { p.Subnets = p.Subnets[:1]; return p },
		want:   "10.0.0.1",
	}, {
		name:   "append a subnet",
		held:   []string{"a", "b", "c", "d", "e", "f", "g", "h"},
		change: func(p Pool) Pool { p.Subnets = append(p.Subnets, v4("10.2.0.0/30")); return p },
		want:   "10.2.0.0",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, clock := t.TempDir(), newFakeClock()
			r := openTest(t, dir, clock, base)
			for _, o := range tt.held {
				if _, err := r.Allocate(ctx, "p", o, ""); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := readFileIfExists(r.Path("p"))

			changed := openTest(t, dir, clock, tt.change(base))
			a, err := changed.Allocate(ctx, "p", "new", "")
			_, checkErr := changed.Check(ctx, nil)
			if tt.wantErr != "" {
				for _, err := range []error{err, checkErr} {
					if !errors.Is(err, ErrPoolInUse) || !contains(err, tt.wantErr) {
						t.Errorf("got %v, want ErrPoolInUse saying %q", err, tt.wantErr)
					}
				}
				if after, _ := readFileIfExists(r.Path("p")); string(after) != string(before) {
					t.Errorf("the refused change modified the registry")
				}
				// Every holder leaving in the same pass ends the conflict; one staying keeps it.
				leaving, err := changed.List(ctx, "p")
				if err != nil {
					t.Fatal(err)
				}
				if ending, err := changed.Check(ctx, leaving); err != nil || !ending["p"] {
					t.Errorf("Check with every holder leaving: %v, ending %v", err, ending)
				}
				if _, err := changed.Check(ctx, leaving[1:]); !errors.Is(err, ErrPoolInUse) {
					t.Errorf("Check with a holder staying: %v, want ErrPoolInUse", err)
				}
				// Releasing still works, and once the blocks are gone the change is accepted.
				for _, o := range tt.held {
					if _, ok, err := changed.Release(ctx, "p", o, ""); !ok || err != nil {
						t.Fatalf("Release %s under a conflicting definition: %v %v", o, ok, err)
					}
				}
				if _, err := changed.Check(ctx, nil); err != nil {
					t.Errorf("Check after releasing everything: %v", err)
				}
				// The last release wrote the configured definition.
				after, _ := readFileIfExists(r.Path("p"))
				if want := fmt.Sprintf("block_size_bits=%d\n", tt.change(base).BlockSizeBits); !strings.Contains(string(after), want) {
					t.Errorf("after releasing everything the registry does not record %q:\n%s", want, after)
				}
				if _, err := changed.Allocate(ctx, "p", "new", ""); err != nil {
					t.Errorf("Allocate after releasing everything: %v", err)
				}
				return
			}
			if err != nil || checkErr != nil {
				t.Fatalf("Allocate: %v; Check: %v", err, checkErr)
			}
			if a.IPv4.String() != tt.want {
				t.Errorf("allocated %s, want %s", a.IPv4, tt.want)
			}
			again := openTest(t, dir, clock, tt.change(base))
			if b, err := again.Allocate(ctx, "p", "new", ""); err != nil || b.IPv4 != a.IPv4 {
				t.Errorf("allocation not kept across Open: %v %v", b, err)
			}
		})
	}
}

func TestGC(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock()
	pools := []Pool{
		testPool("p", 5, time.Minute, v4("10.0.0.0/24")),
		testPool("q", 5, time.Minute, v6("fd00::/120")),
	}
	r := openTest(t, t.TempDir(), clock, pools...)
	for _, o := range []struct{ pool, owner, iface string }{
		{"p", "dead", "eth0"}, {"p", "dead", "eth1"}, {"p", "alive", ""}, {"q", "dead", ""},
	} {
		if _, err := r.Allocate(ctx, o.pool, o.owner, o.iface); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(10 * time.Minute)
	if _, err := r.Allocate(ctx, "p", "young", ""); err != nil {
		t.Fatal(err)
	}
	var asked []string
	isAlive := func(owner string) bool {
		asked = append(asked, owner)
		return owner == "alive"
	}
	freed, err := r.GC(ctx, 10*time.Minute, isAlive)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range freed {
		got = append(got, a.Pool+" "+a.describe()+" "+joinAddrs(a))
	}
	want := []string{"p owner=dead iface=eth0 10.0.0.0", "p owner=dead iface=eth1 10.0.0.1", "q owner=dead fd00::"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("freed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"dead", "alive", "dead"}, asked); diff != "" {
		t.Errorf("isAlive asked about (-want +got):\n%s", diff)
	}
	list, err := r.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, a := range list {
		left = append(left, a.Owner)
	}
	if diff := cmp.Diff([]string{"alive", "young"}, left); diff != "" {
		t.Errorf("left (-want +got):\n%s", diff)
	}
	// Freed addresses wait out the reuse delay like released ones.
	u, err := r.Usage(ctx, "p")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Usage{Pool: "p", BlocksHeld: 1, BlocksAllowed: 8, Addresses: 32, Allocated: 2, Cooling: 2}, u); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if freed, err := r.GC(ctx, 10*time.Minute, isAlive); len(freed) != 0 || err != nil {
		t.Errorf("second GC freed %v, %v", freed, err)
	}
}

func TestUnknownPool(t *testing.T) {
	r := openTest(t, t.TempDir(), newFakeClock(), testPool("p", 5, 0, v4("10.0.0.0/24")))
	ctx := context.Background()
	_, err := r.Allocate(ctx, "nope", "a", "")
	if !errors.Is(err, ErrUnknownPool) {
		t.Errorf("Allocate: %v", err)
	}
	if _, err := r.List(ctx, "nope"); !errors.Is(err, ErrUnknownPool) {
		t.Errorf("List: %v", err)
	}
}

func TestRegistriesTakeTurns(t *testing.T) {
	// Two Registries on one directory, as two processes: each must see the other's changes
	// although it keeps the state it last wrote.
	dir, clock := t.TempDir(), newFakeClock()
	p := testPool("p", 2, time.Minute, v4("10.0.0.0/28"))
	r1, r2 := openTest(t, dir, clock, p), openTest(t, dir, clock, p)
	play(t, r1, clock, "p", []step{{op: "alloc", owner: "a", want: "10.0.0.0"}})
	play(t, r2, clock, "p", []step{{op: "alloc", owner: "b", want: "10.0.0.1"}})
	play(t, r1, clock, "p", []step{{op: "alloc", owner: "c", want: "10.0.0.2"}})
	play(t, r2, clock, "p", []step{{op: "release", owner: "c", want: "10.0.0.2"}})
	play(t, r1, clock, "p", []step{
		{op: "alloc", owner: "d", want: "10.0.0.3"},
		{op: "alloc", owner: "c", want: "10.0.0.4"},
	})
}

// A reserved address (the configuration declares it on a link) is never
// handed out, whatever the block size; the next free one is.
func TestAllocateSkipsReserved(t *testing.T) {
	for _, bits := range []int{0, 2} {
		p := model.DefaultPoolSpec("r", Subnet{IPv4: netip.MustParsePrefix("10.99.0.0/24")})
		p.BlockSizeBits = bits
		p.ReuseDelay = 0
		p.Reserved = []netip.Addr{netip.MustParseAddr("10.99.0.0"), netip.MustParseAddr("10.99.0.2")}
		def, err := compile(p)
		if err != nil {
			t.Fatal(err)
		}
		s := newState(def)
		var got []string
		for i := range 3 {
			a, err := s.allocate(def, fmt.Sprintf("o%d", i), "", time.Unix(0, 0))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, a.IPv4.String())
		}
		if want := "10.99.0.1 10.99.0.3 10.99.0.4"; strings.Join(got, " ") != want {
			t.Errorf("block-size-bits %d: allocated %v, want %s", bits, got, want)
		}
	}
}
