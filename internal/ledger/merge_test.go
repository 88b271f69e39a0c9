package ledger

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Two writers share a ledger file, taking turns as they would under the
// namespace's lock: a long-lived one (the service), whose saves may fail
// and which reads the file again before each turn (LockPass), and short
// ones (apply, ipam), each opening the file, changing records and saving.
// A seeded random walk over a few keys of every kind, so that the writers
// keep changing the same records, dropping and recording them again, and
// relying on a sysctl's record without changing it (a write of the key).
// The oracle is the writers' turns in order: each record a turn touched
// holds what the turn left it. After each of its reloads the service
// holds exactly that, and so does the file after each of its saves: its
// own unsaved changes kept, none of the other's undone, the later one
// winning where both touched a record.
func TestReloadKeepsUnsavedChangesAndTheOtherWriters(t *testing.T) {
	for seed := uint64(1); seed <= 150; seed++ {
		mergeWalk(t, seed, 60)
	}
}

func mergeWalk(t *testing.T, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, 7))
	p := filepath.Join(t.TempDir(), FileName)
	svc, err := openPath(p)
	if err != nil {
		t.Fatal(err)
	}
	want := records{fou: map[model.FouKey]bool{}, nft: map[model.NftTableKey]uint64{}, pending: map[string]bool{}, sysctls: map[string]string{}, routes: map[RouteTable]bool{}, static: map[model.AddressKey]bool{}}
	routeTabs := []RouteTable{{245, 0}, {245, 100}}
	fous := []model.FouKey{{Port: 5555}, {Port: 5556, IPv6: true}}
	tables := []model.NftTableKey{{Family: "inet", Name: "a"}, {Family: "ip", Name: "b"}}
	names := []string{"l0", "l1"}
	keys := []string{"net.ipv4.ip_forward", "net.ipv6.conf.all.forwarding"}
	addrs := []model.AddressKey{{Link: "l0", Prefix: netip.MustParsePrefix("10.99.0.0/24")}, {Link: "l1", Prefix: netip.MustParsePrefix("fd99::1/64")}}
	// change makes one change to a record of l, or relies on a sysctl's,
	// and returns what it did and the record (kind and index).
	change := func(l *Ledger) (string, [2]int) {
		kind, i := rng.IntN(6), rng.IntN(2)
		switch kind {
		case 5:
			k := addrs[i]
			l.SetStaticAddr(k, !l.StaticAddrs[k])
			return fmt.Sprintf("static address %v %v", k, l.StaticAddrs[k]), [2]int{kind, i}
		case 4:
			k := routeTabs[i]
			l.SetRouteTable(k.Protocol, k.Table, !l.RouteTables[k])
			return fmt.Sprintf("route table %v %v", k, l.RouteTables[k]), [2]int{kind, i}
		case 0:
			k := fous[i]
			l.SetFou(k, !l.Fou[k])
			return fmt.Sprintf("fou %v %v", k, l.Fou[k]), [2]int{kind, i}
		case 1:
			k := tables[i]
			switch {
			case !l.NFTables[k]:
				h := uint64(rng.IntN(3))
				l.SetNftTable(k, true)
				if h != 0 {
					l.SetNftTableHandle(k, h)
				}
				return fmt.Sprintf("table %v made, handle %d", k, h), [2]int{kind, i}
			case rng.IntN(2) == 0:
				h := l.NFTHandles[k] + 1 + uint64(rng.IntN(2))
				l.SetNftTableHandle(k, h)
				return fmt.Sprintf("table %v made again, handle %d", k, h), [2]int{kind, i}
			default:
				l.SetNftTable(k, false)
				return fmt.Sprintf("table %v dropped", k), [2]int{kind, i}
			}
		case 2:
			n := names[i]
			l.SetPendingLink(n, !l.PendingLinks[n])
			return fmt.Sprintf("pending %s %v", n, l.PendingLinks[n]), [2]int{kind, i}
		default:
			k := keys[i]
			if _, ok := l.Sysctls[k]; ok {
				switch rng.IntN(3) {
				case 0:
					l.ForgetSysctl(k)
					return "sysctl forgotten " + k, [2]int{kind, i}
				case 1:
					l.TouchSysctl(k)
					return "sysctl relied on " + k, [2]int{kind, i}
				}
			}
			v := fmt.Sprint(rng.IntN(1000))
			for v == l.Sysctls[k] {
				v += "0"
			}
			l.RecordSysctl(k, v)
			return "sysctl " + k + "=" + v, [2]int{kind, i}
		}
	}
	var log []string
	// turn makes a few changes in l and puts in want what each record
	// they touched holds at the end.
	turn := func(l *Ledger, who string) {
		touched := map[[2]int]bool{}
		for range 1 + rng.IntN(3) {
			what, rec := change(l)
			log = append(log, who+": "+what)
			touched[rec] = true
		}
		for rec := range touched {
			i := rec[1]
			switch rec[0] {
			case 0:
				setOrDrop(want.fou, fous[i], l.Fou)
			case 1:
				setOrDrop(want.nft, tables[i], l.records().nft)
			case 2:
				setOrDrop(want.pending, names[i], l.PendingLinks)
			case 4:
				setOrDrop(want.routes, routeTabs[i], l.RouteTables)
			case 5:
				setOrDrop(want.static, addrs[i], l.StaticAddrs)
			default:
				setOrDrop(want.sysctls, keys[i], l.Sysctls)
			}
		}
	}
	check := func(what string, l *Ledger) {
		t.Helper()
		got := l.records()
		if !recordsEqual(got, want) {
			t.Fatalf("seed %d, %s, after:\n%v\n got  %v %v %v %v %v %v\n want %v %v %v %v %v %v", seed, what, log, got.fou, got.nft, got.pending, got.sysctls, got.routes, got.static, want.fou, want.nft, want.pending, want.sysctls, want.routes, want.static)
		}
	}
	for step := range steps {
		if rng.IntN(2) == 0 {
			if err := svc.Reload(); err != nil {
				t.Fatal(err)
			}
			log = append(log, "svc: reload")
			check(fmt.Sprintf("step %d: the service's reload", step), svc)
			turn(svc, "svc")
			if rng.IntN(3) == 0 {
				log = append(log, "svc: save failed")
				continue
			}
			if err := svc.Save(); err != nil {
				t.Fatal(err)
			}
			disk, err := openPath(p)
			if err != nil {
				t.Fatal(err)
			}
			check(fmt.Sprintf("step %d: the file after the service's save", step), disk)
			continue
		}
		other, err := openPath(p)
		if err != nil {
			t.Fatal(err)
		}
		turn(other, "other")
		if err := other.Save(); err != nil {
			t.Fatal(err)
		}
	}
}

// setOrDrop makes want[k] what from holds for k.
func setOrDrop[K comparable, V any](want map[K]V, k K, from map[K]V) {
	if v, ok := from[k]; ok {
		want[k] = v
	} else {
		delete(want, k)
	}
}
