package daemon

import "testing"

func TestOwnPorts(t *testing.T) {
	ports := map[uint32]bool{10: true}
	scans := 0
	o := newOwnPorts(func() map[uint32]bool {
		scans++
		m := map[uint32]bool{}
		for p := range ports {
			m[p] = true
		}
		return m
	})
	if o.has(0) {
		t.Error("port 0 is the kernel's, never ours")
	}
	if !o.has(10) || scans != 1 {
		t.Fatalf("port 10: want ours after one reading, %d readings", scans)
	}
	// Asked twice: the second answer comes from the first judgement.
	first, again := o.has(20), o.has(20)
	if first || again || scans != 2 {
		t.Fatalf("port 20: want foreign, judged once (%d readings)", scans)
	}
	// A socket opened since: the next unknown port reads again.
	ports[30] = true
	if !o.has(30) || scans != 3 {
		t.Fatalf("port 30: want ours after a new reading (%d readings)", scans)
	}
	// A socket closed: still ours for one more reading (its late
	// notifications), then not.
	delete(ports, 10)
	o.refresh()
	if !o.has(10) {
		t.Error("port 10 forgotten at the first reading without it")
	}
	o.refresh()
	if o.has(10) {
		t.Error("port 10 still ours two readings after its socket closed")
	}
	// A refresh forgets what was judged foreign.
	ports[20] = true
	o.refresh()
	if !o.has(20) {
		t.Error("port 20 still taken for foreign after a reading that has it")
	}
	var none *ownPorts
	if none.has(10) {
		t.Error("nil ownPorts has a port")
	}
}
