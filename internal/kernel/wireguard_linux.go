package kernel

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mdlayher/genetlink"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/netreconcile/netreconcile/internal/model"
)

// uapiDir is where wireguard-go puts its control sockets. It is on the
// filesystem, not in the network namespace: two devices of the same name in
// two namespaces collide there.
const uapiDir = "/var/run/wireguard"

// wgState is the WireGuard side of one Netlink: the generic netlink socket
// of the kernel module's devices (wireguard_genl_linux.go) and the wgctrl
// client of wireguard-go's, each opened on first use inside the kernel's
// namespace.
type wgState struct {
	genlMu sync.Mutex
	genl   *genetlink.Conn
	family uint16
	// peerHint is the number of peers each device had at its last read:
	// the next read sizes its arrays by it.
	peerHint map[string]int
	// userspace names the devices last read from wireguard-go, which are
	// not asked of the kernel module first.
	userspace map[string]bool

	once   sync.Once
	client *wgctrl.Client
	err    error
	// msgs counts the messages sent to devices: netlink messages to the
	// kernel module, requests on wireguard-go's control socket.
	msgs atomic.Uint64
	// reads counts the reads of devices: dump requests to the kernel
	// module (one more for each dump a change interrupted), reads asked
	// of wgctrl (a get request on wireguard-go's control socket).
	reads atomic.Uint64
}

func (k *Netlink) wgClient() (*wgctrl.Client, error) {
	k.wg.once.Do(func() {
		k.wg.err = k.InNamespace(func() error {
			c, err := wgctrl.New()
			if err != nil {
				return fmt.Errorf("open wireguard control: %w", err)
			}
			k.wg.client = c
			return nil
		})
	})
	return k.wg.client, k.wg.err
}

// WireGuardMessages counts the messages sent to WireGuard devices so far:
// netlink messages to the kernel module's (a patch of many peers takes
// several), requests to wireguard-go's (one per patch).
func (k *Netlink) WireGuardMessages() uint64 { return k.wg.msgs.Load() }

// WireGuardReads counts the reads of WireGuard devices so far: dump
// requests to the kernel module, get requests to wireguard-go.
func (k *Netlink) WireGuardReads() uint64 { return k.wg.reads.Load() }

// isUserspace reports whether name was last read from wireguard-go.
func (k *Netlink) isUserspace(name string) bool {
	k.wg.genlMu.Lock()
	defer k.wg.genlMu.Unlock()
	return k.wg.userspace[name]
}

func (k *Netlink) setUserspace(name string, on bool) {
	k.wg.genlMu.Lock()
	defer k.wg.genlMu.Unlock()
	if k.wg.userspace == nil {
		k.wg.userspace = map[string]bool{}
	}
	if on {
		k.wg.userspace[name] = true
	} else {
		delete(k.wg.userspace, name)
	}
}

// WireGuardDevice reads a device; the private key is dropped on read. The
// kernel module is asked first (one dump), then wireguard-go.
func (k *Netlink) WireGuardDevice(name string) (*model.WireGuard, error) {
	if !k.isUserspace(name) {
		w, err := k.kernelWireGuardDevice(name)
		if err == nil {
			k.setUserspace(name, false)
			return w, nil
		}
		if !notKernelDevice(err) {
			return nil, err // "list wireguard device NAME: ..."
		}
	}
	c, err := k.wgClient()
	if err != nil {
		return nil, err
	}
	var d *wgtypes.Device
	k.wg.reads.Add(1)
	err = k.InNamespace(func() (err error) { d, err = c.Device(name); return })
	if errors.Is(err, os.ErrNotExist) {
		k.setUserspace(name, false)
		return nil, fmt.Errorf("wireguard device %s: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read wireguard device %s: %w", name, err)
	}
	k.setUserspace(name, d.Type != wgtypes.LinuxKernel)
	return fromWGDevice(d), nil
}

// fromWGDevice converts wgctrl's device: one array of peers, one of every
// allowed IP.
func fromWGDevice(d *wgtypes.Device) *model.WireGuard {
	d.PrivateKey = wgtypes.Key{}
	w := &model.WireGuard{ListenPort: d.ListenPort, FwMark: uint32(d.FirewallMark), Implementation: WireGuardUserspace}
	if d.Type == wgtypes.LinuxKernel {
		w.Implementation = WireGuardKernel
	}
	if d.PublicKey != (wgtypes.Key{}) {
		w.PublicKey = model.Key(d.PublicKey)
	}
	n := 0
	for i := range d.Peers {
		n += len(d.Peers[i].AllowedIPs)
	}
	ips := make([]netip.Prefix, 0, n)
	w.Peers = make([]model.WireGuardPeer, len(d.Peers))
	for i := range d.Peers {
		p := &d.Peers[i]
		mp := &w.Peers[i]
		*mp = model.WireGuardPeer{
			PublicKey:         model.Key(p.PublicKey),
			Keepalive:         p.PersistentKeepaliveInterval,
			LastHandshake:     p.LastHandshakeTime,
			RxBytes:           p.ReceiveBytes,
			TxBytes:           p.TransmitBytes,
			EndpointCandidate: -1,
		}
		if p.PresharedKey != (wgtypes.Key{}) {
			mp.PresharedKey = model.NewSecret(p.PresharedKey)
		}
		if p.Endpoint != nil {
			if ap := p.Endpoint.AddrPort(); ap.IsValid() {
				mp.Endpoint = netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
			}
		}
		if len(p.AllowedIPs) > 0 {
			start := len(ips)
			for _, n := range p.AllowedIPs {
				ips = append(ips, toPrefix(&n))
			}
			mp.AllowedIPs = ips[start:len(ips):len(ips)]
			model.SortPrefixes(mp.AllowedIPs)
		}
	}
	model.SortPeers(w.Peers)
	return w
}

// ConfigureWireGuard applies a patch: to a device of the kernel module in
// as few netlink messages as it takes (wgMessages), to wireguard-go's in one
// request through wgctrl.
func (k *Netlink) ConfigureWireGuard(name string, cfg *WireGuardConfig) error {
	k.wrote()
	if !k.isUserspace(name) {
		err := k.kernelConfigureWireGuard(name, cfg)
		if err == nil {
			return nil
		}
		if !errors.Is(err, errNotKernelWG) {
			// The kernel's errors name neither keys nor values.
			return fmt.Errorf("configure wireguard device %s: %w", name, err)
		}
	}
	c, err := k.wgClient()
	if err != nil {
		return err
	}
	wc := wgtypes.Config{ListenPort: cfg.ListenPort}
	if cfg.PrivateKey != nil {
		key := wgtypes.Key(cfg.PrivateKey.Bytes())
		wc.PrivateKey = &key
	}
	if cfg.FwMark != nil {
		m := int(*cfg.FwMark)
		wc.FirewallMark = &m
	}
	for _, p := range cfg.Peers {
		pc := wgtypes.PeerConfig{PublicKey: wgtypes.Key(p.PublicKey), Remove: p.Remove, UpdateOnly: p.UpdateOnly, PersistentKeepaliveInterval: p.Keepalive, ReplaceAllowedIPs: p.ReplaceAllowedIPs}
		if p.PresharedKey != nil {
			psk := wgtypes.Key(p.PresharedKey.Bytes())
			pc.PresharedKey = &psk
		}
		if p.Endpoint.IsValid() {
			pc.Endpoint = net.UDPAddrFromAddrPort(p.Endpoint)
		}
		for _, a := range p.AllowedIPs {
			pc.AllowedIPs = append(pc.AllowedIPs, *fromPrefix(a))
		}
		wc.Peers = append(wc.Peers, pc)
	}
	// One request on wireguard-go's socket, whatever its size.
	k.wg.msgs.Add(1)
	err = k.InNamespace(func() error { return c.ConfigureDevice(name, wc) })
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("configure wireguard device %s: %w", name, ErrNotFound)
	}
	if err != nil {
		// wgctrl's errors name neither keys nor values.
		return fmt.Errorf("configure wireguard device %s: %w", name, err)
	}
	return nil
}

// StartUserspaceWireGuard starts wireguard-go from a thread inside the
// namespace, so that its tun device is created there. wireguard-go
// daemonizes: the command returns once the device and the socket exist.
func (k *Netlink) StartUserspaceWireGuard(name string) error {
	sock := filepath.Join(uapiDir, name+".sock")
	if _, err := os.Stat(sock); err == nil {
		// A live socket of that name belongs to a device elsewhere (another
		// namespace: the directory is shared); a stale one would block
		// wireguard-go, which reports it.
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			return fmt.Errorf("start %s %s: %s exists already (a device of that name in another network namespace?); choose another name", UserspaceProgram, name, sock)
		}
	}
	prog := UserspaceProgram
	if !filepath.IsAbs(prog) {
		return fmt.Errorf("start userspace wireguard for %s: %q is not an absolute path (--wireguard-go)", name, prog)
	}
	if _, err := os.Stat(prog); err != nil {
		// No module (the caller tried it first) and no wireguard-go: this
		// kernel has no WireGuard.
		return fmt.Errorf("start userspace wireguard for %s: %w: %w (install the wireguard-go package, or give its path with --wireguard-go)", name, ErrUnsupported, err)
	}
	k.wrote()
	err := k.InNamespace(func() error {
		cmd := exec.Command(prog, name)
		// Without WG_PROCESS_FOREGROUND wireguard-go daemonizes (starts
		// itself again with the variable set), so it outlives this call.
		cmd.Env = userspaceEnv
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("start %s %s: %w: %s", UserspaceProgram, name, err, lastLine(out))
		}
		return nil
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(userspaceStartTimeout)
	for {
		_, serr := os.Stat(sock)
		k.forget(name)
		_, lerr := k.index(name)
		if serr == nil && lerr == nil && uapiAnswers(sock) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("start %s %s: no device or control socket after %s", UserspaceProgram, name, userspaceStartTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// uapiAnswers reports whether the daemon behind sock answers a get request.
// The socket and the tun device exist as soon as the first wireguard-go
// process made them; the daemon it forks then opens the device again with
// its default MTU (1420). Only once the daemon answers has it done so: an
// MTU set before would be lost.
func uapiAnswers(sock string) bool {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return false
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("get=1\n\n")); err != nil {
		return false
	}
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := conn.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if strings.Contains(string(buf), "errno=") {
			return strings.Contains(string(buf), "errno=0")
		}
		if err != nil {
			return false
		}
	}
}

func lastLine(b []byte) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}
