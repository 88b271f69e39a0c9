// Package contract holds the in-memory kernel (internal/kernel/kerneltest)
// to the real one. The diff plans around side effects of the kernel: a link
// set down loses its IPv6 addresses, a port joining a vrf its routes, a
// vlan follows its parent's state, an ipvlan its parent's MTU. Unit tests of
// the diff, apply and engine trust the fake to show them. Each scenario here
// makes the same kernel.Interface calls on the fake and on a real kernel
// (a fresh namespace here, the qemu guest for the kinds this kernel lacks),
// and what both then list must be the same, line for line.
package contract

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/kernel/kerneltest"
	"github.com/netreconcile/netreconcile/internal/model"
)

// Protocol stamps the scenarios' routes, as netreconcile's own.
const Protocol = model.DefaultProtocol

// A Scenario is a sequence of kernel calls.
type Scenario struct {
	Name string
	// Kinds are the link kinds it creates: a kernel that lacks one runs
	// it elsewhere (the guest runs every scenario).
	Kinds []string
	// Links are the links it looks at; others (tunl0 and the like that
	// loading a module adds to every namespace) are not compared.
	Links []string
	// Sysctls are the keys it looks at.
	Sysctls []string
	Steps   []Step
}

// A Step is one or more kernel calls; what both kernels list is compared
// after each. Fails says the kernel refuses its last call: the fake must
// refuse it too, with the same errno.
type Step struct {
	Name  string
	Do    func(k kernel.Interface) error
	Fails bool
}

// errno is the system error an error wraps, 0 for none.
func errno(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// Run runs every scenario whose kinds are all in kinds against a fresh fake
// and a fresh real kernel from open, and fails on the first step after
// which they list differently. It fails, rather than skips, a scenario it
// cannot run: the caller chooses the kinds it has.
func Run(t *testing.T, kinds []string, open func(t *testing.T) kernel.Interface) {
	t.Helper()
	ran := 0
	for _, sc := range Scenarios {
		if !subset(sc.Kinds, kinds) {
			continue
		}
		ran++
		t.Run(sc.Name, func(t *testing.T) {
			real := open(t)
			fake := kerneltest.New()
			for i, st := range sc.Steps {
				rerr, ferr := st.Do(real), st.Do(fake)
				if rerr != nil && !st.Fails {
					t.Fatalf("step %d (%s), real kernel: %v", i+1, st.Name, rerr)
				}
				if st.Fails && rerr == nil {
					t.Fatalf("step %d (%s): the real kernel took what the scenario says it refuses", i+1, st.Name)
				}
				if re, fe := errno(rerr), errno(ferr); (rerr == nil) != (ferr == nil) || re != fe {
					t.Fatalf("step %d (%s): the real kernel says %v (%d), the fake %v (%d)", i+1, st.Name, rerr, re, ferr, fe)
				}
				want, err := Observe(real, sc.Links, sc.Sysctls)
				if err != nil {
					t.Fatalf("step %d (%s): read the real kernel: %v", i+1, st.Name, err)
				}
				got, err := Observe(fake, sc.Links, sc.Sysctls)
				if err != nil {
					t.Fatalf("step %d (%s): read the fake kernel: %v", i+1, st.Name, err)
				}
				if got != want {
					t.Fatalf("after step %d (%s) the fake differs from the real kernel\nreal:\n%s\nfake:\n%s", i+1, st.Name, want, got)
				}
			}
		})
	}
	if ran == 0 {
		t.Fatalf("no scenario runs with the kinds %v", kinds)
	}
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Observe renders what the scenarios look at, one object a line, sorted:
// the links named (kind, MTU, state, master), their addresses but IPv6
// link-local ones (with the secondary flag), the routes of Protocol and
// the sysctl keys named.
func Observe(k kernel.Reader, links, keys []string) (string, error) {
	var out []string
	ls, err := k.Links()
	if err != nil {
		return "", err
	}
	for _, l := range ls {
		if !slices.Contains(links, l.Name) {
			continue
		}
		state := "down"
		if l.Up {
			state = "up"
		}
		s := fmt.Sprintf("link %s %s mtu %d %s", l.Name, l.Kind, l.MTU, state)
		if l.Master != "" {
			s += " master " + l.Master
		}
		out = append(out, s)
	}
	as, err := k.Addresses()
	if err != nil {
		return "", err
	}
	for _, a := range as {
		// The kernel makes an IPv6 link-local address on every link; the
		// fake makes none, and the diff never owns one (model.State.Owned).
		if !slices.Contains(links, a.Link) || a.Prefix.Addr().Is6() && a.Prefix.Addr().IsLinkLocalUnicast() {
			continue
		}
		s := fmt.Sprintf("address %s dev %s", a.Prefix, a.Link)
		if a.Secondary {
			s += " secondary"
		}
		out = append(out, s)
	}
	rs, err := k.Routes(Protocol)
	if err != nil {
		return "", err
	}
	for _, r := range rs {
		out = append(out, "route "+r.String())
	}
	if len(keys) > 0 {
		vs, err := k.Sysctls(keys)
		if err != nil {
			return "", err
		}
		for _, key := range keys {
			v, ok := vs[key]
			if !ok {
				v = "(none)"
			}
			out = append(out, "sysctl "+key+" = "+v)
		}
	}
	sort.Strings(out)
	return strings.Join(out, "\n") + "\n", nil
}

// Helpers that build the calls of a step.

func veth(name, peer string, mtu int) *model.Link {
	return &model.Link{Name: name, Kind: model.KindVeth, MTU: mtu, Veth: &model.Veth{Peer: peer}}
}

func link(name, kind string, mtu int) *model.Link {
	return &model.Link{Name: name, Kind: kind, MTU: mtu}
}

func addLinks(ls ...*model.Link) func(kernel.Interface) error {
	return func(k kernel.Interface) error {
		for _, l := range ls {
			if err := k.AddLink(l); err != nil {
				return err
			}
		}
		return nil
	}
}

func up(names ...string) func(kernel.Interface) error {
	return func(k kernel.Interface) error {
		for _, n := range names {
			if err := k.SetLinkUp(n, true); err != nil {
				return err
			}
		}
		return nil
	}
}

func down(name string) func(kernel.Interface) error {
	return func(k kernel.Interface) error { return k.SetLinkUp(name, false) }
}

func mtu(name string, m int) func(kernel.Interface) error {
	return func(k kernel.Interface) error { return k.SetLinkMTU(name, m) }
}

func master(name, m string) func(kernel.Interface) error {
	return func(k kernel.Interface) error { return k.SetLinkMaster(name, m) }
}

func address(dev, prefix string) *model.Address {
	return &model.Address{Link: dev, Prefix: netip.MustParsePrefix(prefix)}
}

func addAddrs(as ...*model.Address) func(kernel.Interface) error {
	return func(k kernel.Interface) error {
		for _, a := range as {
			if err := k.ReplaceAddress(a, Protocol); err != nil {
				return err
			}
		}
		return nil
	}
}

func delAddr(a *model.Address) func(kernel.Interface) error {
	return func(k kernel.Interface) error { return k.DeleteAddress(a) }
}

func route(dst, via, dev string) *model.Route {
	return &model.Route{Table: model.TableMain, Dst: netip.MustParsePrefix(dst), Type: model.RouteUnicast,
		Gateway: netip.MustParseAddr(via), Dev: dev}
}

func addRoutes(rs ...*model.Route) func(kernel.Interface) error {
	return func(k kernel.Interface) error {
		ws := make([]kernel.RouteWrite, len(rs))
		for i, r := range rs {
			ws[i] = kernel.RouteWrite{Action: kernel.RouteAdd, Route: r}
		}
		for i, err := range k.WriteRoutes(ws, Protocol) {
			if err != nil {
				return fmt.Errorf("add route %s: %w", rs[i], err)
			}
		}
		return nil
	}
}

func sysctls(kv ...string) func(kernel.Interface) error {
	return func(k kernel.Interface) error {
		for i := 0; i+1 < len(kv); i += 2 {
			if err := k.SetSysctl(kv[i], kv[i+1]); err != nil {
				return err
			}
		}
		return nil
	}
}

func seq(fs ...func(kernel.Interface) error) func(kernel.Interface) error {
	return func(k kernel.Interface) error {
		for _, f := range fs {
			if err := f(k); err != nil {
				return err
			}
		}
		return nil
	}
}

// kernelInterface shortens the scenarios' own calls.
type kernelInterface = kernel.Interface

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
