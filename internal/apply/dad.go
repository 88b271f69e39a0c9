package apply

import (
	"context"
	"net/netip"
	"time"

	"github.com/netreconcile/netreconcile/internal/diff"
	"github.com/netreconcile/netreconcile/internal/kernel"
)

// dadWait bounds the wait for IPv6 source addresses this apply added to
// finish duplicate address detection. The kernel's defaults make DAD take
// dad_transmits (1) × retrans_time (1 s), after a random delay of up to
// rtr_solicit_delay (1 s) on a link just brought up: about 2 s at most.
// 5 s leaves room for a loaded host; a link whose DAD is slower (more
// transmits configured) gets the route on the next pass.
const dadWait = 5 * time.Second

// dadPoll is how often the addresses are read while waiting.
const dadPoll = 50 * time.Millisecond

// waitForSources waits until the IPv6 source addresses of the routes in ops
// that this apply added (in done) have left the tentative state: until then
// the kernel refuses a route with that source (EINVAL). It returns why each
// source still cannot be used when the wait ends ("" for none), for the
// route errors.
func waitForSources(ctx context.Context, k kernel.Interface, ops []diff.Op, done []*diff.Op) map[netip.Addr]string {
	added := map[netip.Addr]bool{}
	for _, op := range done {
		if op.Kind == diff.KindAddress && op.Action != diff.Delete && op.Address.Prefix.Addr().Is6() {
			added[op.Address.Prefix.Addr()] = true
		}
	}
	if len(added) == 0 {
		return nil
	}
	wait := map[netip.Addr]bool{}
	for i := range ops {
		if op := &ops[i]; op.Action != diff.Delete && op.Route != nil && added[op.Route.Src] {
			wait[op.Route.Src] = true
		}
	}
	if len(wait) == 0 {
		return nil
	}
	deadline := time.Now().Add(dadWait)
	for {
		as, err := k.Addresses()
		if err != nil {
			return nil // the route writes say what the kernel thinks
		}
		why := map[netip.Addr]string{}
		pending := false
		for _, a := range as {
			switch ip := a.Prefix.Addr(); {
			case !wait[ip]:
			case a.DADFailed:
				why[ip] = "failed duplicate address detection (another host has it)"
			case a.Tentative:
				why[ip] = "is still tentative (duplicate address detection not finished after " + dadWait.String() + ")"
				pending = true
			}
		}
		if !pending || time.Now().After(deadline) {
			return why
		}
		select {
		case <-ctx.Done():
			return why
		case <-time.After(dadPoll):
		}
	}
}
