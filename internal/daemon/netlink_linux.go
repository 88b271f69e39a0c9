package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// eventBufferSize is the receive buffer of each notification socket. The
// default (about 200 KiB) overflows with ENOBUFS when thousands of routes
// change at once (a routing daemon converging, a link going down with its
// routes); 4 MiB holds tens of thousands of notifications. It is set with
// SO_RCVBUFFORCE, which CAP_NET_ADMIN allows past net.core.rmem_max.
const eventBufferSize = 4 << 20

// KernelEvents returns the sources that wake the loop on rtnetlink
// notifications in the network namespace ns (netns.None() for the
// daemon's own): links, addresses, routes and rules of both families.
//
// Each notification only wakes the loop. A subscription whose channel closes
// (a receive error, ENOBUFS after a storm) has lost events: the source
// returns, runSource subscribes again and wakes the loop for a full resync.
func KernelEvents(ns netns.NsHandle) []Source {
	nsp := func() *netns.NsHandle { h := ns; return &h }
	return []Source{
		SourceFunc{"netlink links", func(ctx context.Context, wake func()) error {
			ch := make(chan netlink.LinkUpdate, 64)
			var cb errCallback
			err := netlink.LinkSubscribeWithOptions(ch, ctx.Done(), netlink.LinkSubscribeOptions{
				Namespace: nsp(), ErrorCallback: cb.set, ReceiveBufferSize: eventBufferSize, ReceiveBufferForceSize: true,
			})
			return drain(ctx, "links", ch, err, &cb, wake)
		}},
		SourceFunc{"netlink addresses", func(ctx context.Context, wake func()) error {
			ch := make(chan netlink.AddrUpdate, 64)
			var cb errCallback
			err := netlink.AddrSubscribeWithOptions(ch, ctx.Done(), netlink.AddrSubscribeOptions{
				Namespace: nsp(), ErrorCallback: cb.set, ReceiveBufferSize: eventBufferSize, ReceiveBufferForceSize: true,
			})
			return drain(ctx, "addresses", ch, err, &cb, wake)
		}},
		SourceFunc{"netlink routes", func(ctx context.Context, wake func()) error {
			ch := make(chan netlink.RouteUpdate, 64)
			var cb errCallback
			err := netlink.RouteSubscribeWithOptions(ch, ctx.Done(), netlink.RouteSubscribeOptions{
				Namespace: nsp(), ErrorCallback: cb.set, ReceiveBufferSize: eventBufferSize, ReceiveBufferForceSize: true,
			})
			return drain(ctx, "routes", ch, err, &cb, wake)
		}},
		SourceFunc{"netlink rules", func(ctx context.Context, wake func()) error {
			return subscribeRules(ctx, ns, wake)
		}},
		SourceFunc{"nftables", func(ctx context.Context, wake func()) error {
			return subscribeNftables(ctx, ns, wake)
		}},
	}
}

// errCallback keeps the last error a subscription reported: the library
// reports the reason of a closed channel only through its callback.
type errCallback struct {
	mu  sync.Mutex
	err error
}

func (c *errCallback) set(err error) {
	c.mu.Lock()
	c.err = err
	c.mu.Unlock()
}

func (c *errCallback) get() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// drain wakes the loop for every update until the channel closes. The
// library's receiving goroutine blocks on a full channel, so the channel is
// read to its end even when ctx is done.
func drain[T any](ctx context.Context, what string, ch <-chan T, subErr error, cb *errCallback, wake func()) error {
	if subErr != nil {
		return fmt.Errorf("subscribe to %s: %w", what, subErr)
	}
	for range ch {
		wake()
	}
	if ctx.Err() != nil {
		return nil
	}
	if err := cb.get(); err != nil {
		return fmt.Errorf("%s subscription closed: %w", what, err)
	}
	return fmt.Errorf("%s subscription closed", what)
}

// subscribeRules listens to RTNLGRP_IPV4_RULE and RTNLGRP_IPV6_RULE, which
// the library has no subscription for. The messages are not decoded: any
// rule notification wakes the loop.
func subscribeRules(ctx context.Context, ns netns.NsHandle, wake func()) error {
	s, err := nl.SubscribeAt(ns, netns.None(), unix.NETLINK_ROUTE, unix.RTNLGRP_IPV4_RULE, unix.RTNLGRP_IPV6_RULE)
	if err != nil {
		return fmt.Errorf("subscribe to rules: %w", err)
	}
	if err := s.SetReceiveBufferSize(eventBufferSize, true); err != nil {
		s.Close()
		return fmt.Errorf("subscribe to rules: set receive buffer: %w", err)
	}
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	for {
		msgs, from, err := s.Receive()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.Close()
			if errors.Is(err, unix.ENOBUFS) {
				return fmt.Errorf("rules subscription overflowed: %w", err)
			}
			return fmt.Errorf("rules subscription closed: %w", err)
		}
		if from.Pid != nl.PidKernel {
			continue
		}
		for _, m := range msgs {
			if m.Header.Type == unix.RTM_NEWRULE || m.Header.Type == unix.RTM_DELRULE {
				wake()
				break
			}
		}
	}
}

// nfnlgrpNftables is NFNLGRP_NFTABLES: every committed nftables change.
const nfnlgrpNftables = 7

// subscribeNftables listens to nftables changes (what `nft monitor` shows).
// Any message from the kernel wakes the loop: the pass reads the owned tables
// and finds out whether anything of ours changed. Our own batches cause one
// extra, empty pass.
func subscribeNftables(ctx context.Context, ns netns.NsHandle, wake func()) error {
	s, err := nl.SubscribeAt(ns, netns.None(), unix.NETLINK_NETFILTER, nfnlgrpNftables)
	if err != nil {
		return fmt.Errorf("subscribe to nftables: %w", err)
	}
	if err := s.SetReceiveBufferSize(eventBufferSize, true); err != nil {
		s.Close()
		return fmt.Errorf("subscribe to nftables: set receive buffer: %w", err)
	}
	stop := context.AfterFunc(ctx, s.Close)
	defer stop()
	for {
		_, from, err := s.Receive()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.Close()
			if errors.Is(err, unix.ENOBUFS) {
				return fmt.Errorf("nftables subscription overflowed: %w", err)
			}
			return fmt.Errorf("nftables subscription closed: %w", err)
		}
		if from.Pid == nl.PidKernel {
			wake()
		}
	}
}
