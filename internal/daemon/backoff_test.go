package daemon

import (
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/engine"
)

func TestBackoff(t *testing.T) {
	b := newBackoff(200*time.Millisecond, time.Second)
	t0 := time.Unix(1000, 0)
	var delays []time.Duration
	for range 5 {
		delays = append(delays, b.failed("route x", t0))
	}
	want := []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i := range want {
		if delays[i] != want[i] {
			t.Fatalf("delays %v, want %v", delays, want)
		}
	}
	if b.ready("route x", t0.Add(999*time.Millisecond)) {
		t.Error("ready before its delay")
	}
	if !b.ready("route x", t0.Add(time.Second)) || !b.ready("route y", t0) {
		t.Error("not ready after its delay, or an object never failed is held")
	}
	b.failed("link a", t0.Add(-time.Second))
	if next, ok := b.next(); !ok || !next.Equal(t0.Add(-800*time.Millisecond)) {
		t.Errorf("next = %v %v, want the earliest retry", next, ok)
	}
	b.keep(map[string]bool{"link a": true})
	if !b.ready("route x", t0) {
		t.Error("an object no pass needs is still held")
	}
	b.succeeded("link a")
	if _, ok := b.next(); ok {
		t.Error("next retry with nothing failed")
	}
}

type nopNotifier struct{}

func (nopNotifier) Notify(string) {}

func TestStatusLine(t *testing.T) {
	if _, err := New(Options{Config: "x"}); err == nil {
		t.Fatal("New without an engine must fail")
	}
	d, err := New(Options{Config: "x", Engine: &engine.Engine{}, Notifier: nopNotifier{}})
	if err != nil {
		t.Fatal(err)
	}
	d.stats = stats{objects: 4, drift: 2, lastPass: time.Date(2026, 11, 2, 10, 0, 1, 0, time.UTC), converged: true}
	if got, want := d.Status(), "converged: 4 objects, 2 drift repaired, 0 errors, last reconcile 2026-11-02 10:00:01"; got != want {
		t.Errorf("Status() = %q, want %q", got, want)
	}
	d.cfgErr = desired.Errors{
		{Pos: desired.Pos{File: "/etc/n.yaml", Line: 5, Col: 10}, Path: "links.br0.mtu", Msg: "expected an MTU\nfrom 68"},
		{Pos: desired.Pos{File: "/etc/n.yaml", Line: 9, Col: 3}, Msg: "second"},
	}
	d.stats.converged, d.stats.errors, d.stats.firstErr = false, 1, "add route x: file exists"
	want := "invalid configuration, enforcing the last good one: /etc/n.yaml:5:10: links.br0.mtu: expected an MTU from 68 (and 1 more); " +
		"4 objects, 2 drift repaired, 1 errors (add route x: file exists), last reconcile 2026-11-02 10:00:01"
	if got := d.Status(); got != want {
		t.Errorf("Status() =\n%q\nwant\n%q", got, want)
	}
}
