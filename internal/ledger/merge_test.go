package ledger

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Two writers share a ledger file, taking turns as they would under the
// namespace's lock: a long-lived one (the service), whose saves may fail
// and which reads the file again before each turn (LockPass), and short
// ones (apply, ipam), each opening the file, changing records and saving.
// A seeded random walk over a few keys of every kind, so that the writers
// keep changing the same records. The oracle is the writers' turns applied
// in order, each turn's net change (a record added and dropped within one
// turn, as a pending link is, is no change): after each of its reloads the
// service holds exactly that, and so does the file after each of its
// saves. Its own unsaved changes are kept, none of the other's undone, and
// where both changed a record the later change wins.
//
// Between two of the service's reloads the other writer changes a record
// at most once. A record it changed and changed back meanwhile (A to B to
// A) looks unchanged to the reload, whose only reference is the file, so
// the service's unsaved change to it stands: a record of an object that
// may be gone (the next pass forgets it, or makes the object again when
// the file declares it) or, for a table, with a handle the kernel's table
// does not have (not taken for ours).
func TestReloadKeepsUnsavedChangesAndTheOtherWriters(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		mergeWalk(t, seed, 60)
	}
}

// applyChange makes in m the changes from before to after.
func applyChange[K comparable, V comparable](m, before, after map[K]V) {
	for k, v := range after {
		if bv, ok := before[k]; !ok || bv != v {
			m[k] = v
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			delete(m, k)
		}
	}
}

func mergeWalk(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := filepath.Join(t.TempDir(), FileName)
	svc, err := Open(p)
	if err != nil {
		t.Fatal(err)
	}
	want := records{map[model.FouKey]bool{}, map[model.NftTableKey]uint64{}, map[string]bool{}, map[string]string{}}
	fous := []model.FouKey{{Port: 5555}, {Port: 5556, IPv6: true}}
	tables := []model.NftTableKey{{Family: "inet", Name: "a"}, {Family: "ip", Name: "b"}}
	names := []string{"l0", "l1"}
	keys := []string{"net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"}
	// touched are the records the other writer changed since the
	// service's last reload.
	touched := map[string]bool{}
	// change makes one change to a record free says may change, and
	// names it; "" when it picked one it may not.
	change := func(l *Ledger, free func(string) bool) string {
		kind, i := rng.IntN(4), rng.IntN(2)
		id := fmt.Sprint(kind, i)
		if !free(id) {
			return ""
		}
		touched[id] = touched[id] || l != svc
		switch kind {
		case 0:
			k := fous[i]
			l.SetFou(k, !l.Fou[k])
			return fmt.Sprintf("fou %v %v", k, l.Fou[k])
		case 1:
			k := tables[i]
			switch {
			case !l.NFTables[k]:
				h := uint64(rng.IntN(3))
				l.SetNftTable(k, true)
				if h != 0 {
					l.SetNftTableHandle(k, h)
				}
				return fmt.Sprintf("table %v made, handle %d", k, h)
			case rng.IntN(2) == 0:
				h := l.NFTHandles[k] + 1 + uint64(rng.IntN(2))
				l.SetNftTableHandle(k, h)
				return fmt.Sprintf("table %v made again, handle %d", k, h)
			default:
				l.SetNftTable(k, false)
				return fmt.Sprintf("table %v dropped", k)
			}
		case 2:
			n := names[i]
			if l.PendingLinks[n] {
				delete(l.PendingLinks, n)
			} else {
				l.PendingLinks[n] = true
			}
			return fmt.Sprintf("pending %s %v", n, l.PendingLinks[n])
		default:
			k := keys[i]
			if _, ok := l.Sysctls[k]; ok && rng.IntN(2) == 0 {
				l.ForgetSysctl(k)
				return "sysctl forgotten " + k
			}
			v := fmt.Sprint(rng.IntN(1000))
			for v == l.Sysctls[k] {
				v += "0"
			}
			l.SetSysctl(k, v)
			return "sysctl " + k + "=" + v
		}
	}
	var log []string
	turn := func(l *Ledger, who string, free func(string) bool) {
		before := l.records()
		for range 1 + rng.IntN(3) {
			if c := change(l, free); c != "" {
				log = append(log, who+": "+c)
			}
		}
		after := l.records()
		applyChange(want.fou, before.fou, after.fou)
		applyChange(want.nft, before.nft, after.nft)
		applyChange(want.pending, before.pending, after.pending)
		applyChange(want.sysctls, before.sysctls, after.sysctls)
	}
	check := func(what string, l *Ledger) {
		t.Helper()
		got := l.records()
		if !maps.Equal(got.fou, want.fou) || !maps.Equal(got.nft, want.nft) || !maps.Equal(got.pending, want.pending) || !maps.Equal(got.sysctls, want.sysctls) {
			t.Fatalf("seed %d, %s, after:\n%v\n got  %v %v %v %v\n want %v %v %v %v", seed, what, log, got.fou, got.nft, got.pending, got.sysctls, want.fou, want.nft, want.pending, want.sysctls)
		}
	}
	for step := range steps {
		if rng.IntN(2) == 0 {
			if err := svc.Reload(); err != nil {
				t.Fatal(err)
			}
			log = append(log, "svc: reload")
			check(fmt.Sprintf("step %d: the service's reload", step), svc)
			clear(touched)
			turn(svc, "svc", func(string) bool { return true })
			if rng.IntN(3) == 0 {
				log = append(log, "svc: save failed")
				continue
			}
			if err := svc.Save(); err != nil {
				t.Fatal(err)
			}
			disk, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("step %d: the file after the service's save", step), disk)
			continue
		}
		other, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		// A record changed at most once between two reloads, in one
		// change: the other writer's net change is what the reload sees.
		once := map[string]bool{}
		turn(other, "other", func(id string) bool {
			if touched[id] && !once[id] {
				return false
			}
			once[id] = true
			return true
		})
		if err := other.Save(); err != nil {
			t.Fatal(err)
		}
	}
}
