package desired

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

type wireguardConf struct {
	Meta
	PrivateKeyFile       string        `yaml:"private-key-file"`
	PrivateKeyCredential string        `yaml:"private-key-credential"`
	PublicKey            string        `yaml:"public-key"`
	ListenPort           int           `yaml:"listen-port" schema:"limits=listenPort"`
	FwMark               *Mark         `yaml:"fwmark"`
	Userspace            bool          `yaml:"userspace"`
	Rotation             *rotationConf `yaml:"rotation"`
	Peers                []*wgPeerConf `yaml:"peers" schema:"unique"`
}

type rotationConf struct {
	Meta
	ConnectTimeout *Duration `yaml:"connect-timeout"`
	DownAfter      *Duration `yaml:"down-after"`
	Interval       *Duration `yaml:"interval"`
}

type wgPeerConf struct {
	Meta
	PublicKey           string        `yaml:"public-key" schema:"required"`
	PresharedKeyFile    string        `yaml:"preshared-key-file"`
	KeepPresharedKey    bool          `yaml:"keep-preshared-key"`
	AllowedIPs          []*Prefix     `yaml:"allowed-ips"`
	PersistentKeepalive *Duration     `yaml:"persistent-keepalive"`
	Endpoints           []*wgEndpoint `yaml:"endpoints"`
}

// wgEndpoint is one candidate endpoint, checked where it is written.
type wgEndpoint struct{ S string }

func (e *wgEndpoint) parse(s string) error {
	e.S = s
	return checkEndpoint(s)
}

// CredentialsDirEnv is where systemd puts a unit's credentials (LoadCredential=).
const CredentialsDirEnv = "CREDENTIALS_DIRECTORY"

// portAt is a WireGuard device's listen port's holder and where it was set.
type portAt struct {
	link string
	pos  Pos
}

// maxKeepalive is the largest persistent keepalive WireGuard takes (a u16 of seconds).
const maxKeepalive = 65535 * time.Second

func (b *builder) wireguard(path string, wc *wireguardConf, l *model.Link) {
	w := &model.WireGuard{ListenPort: wc.ListenPort, Userspace: wc.Userspace, Rotation: model.DefaultRotation}
	if wc.ListenPort < 0 || wc.ListenPort > 65535 {
		b.errs.add(wc.at("listen-port"), path+".listen-port", "expected a UDP port from 0 (random) to 65535, found %d", wc.ListenPort)
	} else if wc.ListenPort != 0 && l.Up {
		// One socket per port and family in a namespace: a second device
		// on the port met EADDRINUSE at apply. A device that is down
		// binds nothing (it keeps the port for when it comes up).
		if prev, taken := b.wgPortAt[wc.ListenPort]; taken {
			b.errs.add(wc.at("listen-port"), path+".listen-port", "UDP port %d is %s's listen-port too (set at %s): the kernel binds a port once per namespace; give each device its own", wc.ListenPort, prev.link, prev.pos)
		} else {
			b.wgPortAt[wc.ListenPort] = portAt{l.Name, wc.at("listen-port")}
		}
	}
	if wc.FwMark != nil {
		if wc.FwMark.HasMask {
			b.errs.add(wc.at("fwmark"), path+".fwmark", "WireGuard sets a whole mark; a mask is not accepted")
		}
		w.FwMark = wc.FwMark.Value
	}
	switch {
	case wc.PrivateKeyFile != "" && wc.PrivateKeyCredential != "":
		b.errs.add(wc.at("private-key-credential"), path+".private-key-credential", "give either private-key-file or private-key-credential, not both")
	case looksLikeKey(wc.PrivateKeyFile):
		b.errs.add(wc.at("private-key-file"), path+".private-key-file", "this looks like a key itself (not quoted here); write it to a file with mode 0600 and give the file's path")
	case looksLikeKey(wc.PrivateKeyCredential):
		b.errs.add(wc.at("private-key-credential"), path+".private-key-credential", "this looks like a key itself (not quoted here); give the name of a systemd credential holding it")
	case wc.PrivateKeyFile != "":
		w.PrivateKeyFile = resolvePath(wc.Pos.File, wc.PrivateKeyFile)
		if k, err := readKey(w.PrivateKeyFile); err != nil {
			b.errs.add(wc.at("private-key-file"), path+".private-key-file", "%v", err)
		} else {
			w.PrivateKey = k
		}
	case wc.PrivateKeyCredential != "":
		w.PrivateKeyCredential = wc.PrivateKeyCredential
		dir := os.Getenv(CredentialsDirEnv)
		switch {
		case strings.ContainsAny(wc.PrivateKeyCredential, "/\x00") || wc.PrivateKeyCredential == "." || wc.PrivateKeyCredential == "..":
			b.errs.add(wc.at("private-key-credential"), path+".private-key-credential", "expected a credential name as in LoadCredential=, found %q", wc.PrivateKeyCredential)
		case dir == "":
			b.errs.add(wc.at("private-key-credential"), path+".private-key-credential", "$%s is not set: run under systemd with LoadCredential=%s:PATH, or use private-key-file", CredentialsDirEnv, wc.PrivateKeyCredential)
		default:
			if k, err := readKey(filepath.Join(dir, wc.PrivateKeyCredential)); err != nil {
				b.errs.add(wc.at("private-key-credential"), path+".private-key-credential", "credential %s: %v", wc.PrivateKeyCredential, err)
			} else {
				w.PrivateKey = k
			}
		}
	case wc.PublicKey != "":
		// The device keeps the key it holds (what show prints: the
		// kernel gives no key file back).
		w.KeepPrivateKey = true
	default:
		b.errs.add(wc.Pos, path+".private-key-file", "missing; expected the path of a file holding the private key (wg genkey > FILE; chmod 600 FILE), private-key-credential, or public-key to keep the key the device holds")
	}
	if w.PrivateKey.IsSet() {
		w.PublicKey = w.PrivateKey.PublicKey()
	}
	if wc.PublicKey != "" {
		if k, err := model.ParseKey(wc.PublicKey); err != nil {
			b.errs.add(wc.at("public-key"), path+".public-key", "%v, found %q", err, wc.PublicKey)
		} else if w.PrivateKey.IsSet() && k != w.PublicKey {
			// Never the private key's public key: that would tell
			// whoever reads the message which key the file holds.
			b.errs.add(wc.at("public-key"), path+".public-key", "is not the public key of the private key given: the device would hold another key than the one the file names")
		} else {
			w.PublicKey = k
		}
	}
	if rc := wc.Rotation; rc != nil {
		set := func(key string, d *Duration, dst *time.Duration) {
			if d == nil {
				return
			}
			if d.D <= 0 {
				b.errs.add(rc.at(key), path+".rotation."+key, "expected a positive duration like 15s")
				return
			}
			*dst = d.D
		}
		set("connect-timeout", rc.ConnectTimeout, &w.Rotation.ConnectTimeout)
		set("down-after", rc.DownAfter, &w.Rotation.DownAfter)
		set("interval", rc.Interval, &w.Rotation.Interval)
		if w.Rotation.DownAfter < w.Rotation.ConnectTimeout {
			b.errs.add(rc.Pos, path+".rotation.down-after", "must not be shorter than connect-timeout (%s)", w.Rotation.ConnectTimeout)
		}
	}
	// Sized once: a device may declare ten thousand peers. Each names
	// the peer by its index in the list, not its Pos: a map without a
	// string to scan, a fraction of the size.
	seen := make(map[model.Key]int32, len(wc.Peers))
	routed := make(map[netip.Prefix]int32, len(wc.Peers))
	if len(wc.Peers) > 0 {
		w.Peers = make([]model.WireGuardPeer, 0, len(wc.Peers))
	}
	for i, pc := range wc.Peers {
		if pc != nil && pc.notMapping {
			continue // reported by the decoder
		}
		pp := path + ".peers[" + strconv.Itoa(i) + "]"
		if pc == nil {
			b.errs.add(wc.at("peers"), pp, "empty peer; expected at least public-key")
			continue
		}
		p, ok := b.wgPeer(pp, pc)
		if !ok {
			continue
		}
		if prev, dup := seen[p.PublicKey]; dup {
			b.errs.add(pc.at("public-key"), pp+".public-key", "peer given twice (first at %s)", wc.Peers[prev].Pos)
			continue
		}
		if p.PublicKey == w.PublicKey && !w.PublicKey.IsZero() {
			b.errs.add(pc.at("public-key"), pp+".public-key", "is this device's own public key")
			continue
		}
		seen[p.PublicKey] = int32(i)
		shared := false
		for _, a := range p.AllowedIPs {
			if prev, dup := routed[a]; dup {
				// The kernel's table of allowed IPs routes a prefix to one
				// peer: it moves it to whichever peer was given it last,
				// and the other would be given it back on every pass.
				b.errs.add(pc.at("allowed-ips"), pp+".allowed-ips", "%s is an allowed IP of the peer at %s too: WireGuard routes a prefix to one peer of a device (the kernel moves it to the peer given it last); give it to one", a, wc.Peers[prev].Pos)
				shared = true
				continue
			}
			routed[a] = int32(i)
		}
		if shared {
			continue
		}
		w.Peers = append(w.Peers, p)
	}
	model.SortPeers(w.Peers)
	l.WireGuard = w
}

func (b *builder) wgPeer(path string, pc *wgPeerConf) (model.WireGuardPeer, bool) {
	// The arena's text: one allocation for many peers, not one each.
	p := model.WireGuardPeer{Origin: b.origins.String(pc.Pos), EndpointCandidate: -1}
	ok := true
	if pc.PublicKey == "" {
		b.errs.add(pc.Pos, path+".public-key", "missing; expected the peer's public key (44 characters of base64, from wg pubkey)")
		ok = false
	} else if k, err := model.ParseKey(pc.PublicKey); err != nil {
		b.errs.add(pc.at("public-key"), path+".public-key", "%v, found %q", err, pc.PublicKey)
		ok = false
	} else {
		p.PublicKey = k
	}
	if pc.KeepPresharedKey && pc.PresharedKeyFile != "" {
		b.errs.add(pc.at("keep-preshared-key"), path+".keep-preshared-key", "give either preshared-key-file or keep-preshared-key, not both")
	}
	p.KeepPresharedKey = pc.KeepPresharedKey
	if looksLikeKey(pc.PresharedKeyFile) {
		b.errs.add(pc.at("preshared-key-file"), path+".preshared-key-file", "this looks like a key itself (not quoted here); write it to a file with mode 0600 and give the file's path")
	} else if pc.PresharedKeyFile != "" {
		p.PresharedKeyFile = resolvePath(pc.Pos.File, pc.PresharedKeyFile)
		if k, err := readKey(p.PresharedKeyFile); err != nil {
			b.errs.add(pc.at("preshared-key-file"), path+".preshared-key-file", "%v", err)
		} else {
			p.PresharedKey = k
		}
	}
	if len(pc.AllowedIPs) > 0 {
		p.AllowedIPs = make([]netip.Prefix, 0, len(pc.AllowedIPs))
	}
	for i, a := range pc.AllowedIPs {
		if a == nil {
			continue
		}
		if a.Default {
			b.errs.add(pc.at("allowed-ips"), fmt.Sprintf("%s.allowed-ips[%d]", path, i), "write 0.0.0.0/0 or ::/0 rather than default")
			continue
		}
		// wgctrl sends an IPv4-mapped prefix as an IPv4 address with the
		// IPv6 length, which the kernel refuses.
		if a.P.Addr().Is4In6() {
			b.errs.add(pc.at("allowed-ips"), fmt.Sprintf("%s.allowed-ips[%d]", path, i), "%s is an IPv4-mapped IPv6 prefix, which WireGuard cannot take: write the IPv4 prefix", a.P)
			continue
		}
		p.AllowedIPs = append(p.AllowedIPs, a.P)
	}
	// A prefix given twice is kept once: sorted, the second is next to
	// the first (no map per peer, for a list of one or two).
	model.SortPrefixes(p.AllowedIPs)
	if p.AllowedIPs = slices.Compact(p.AllowedIPs); len(p.AllowedIPs) == 0 {
		p.AllowedIPs = nil
	}
	if k := pc.PersistentKeepalive; k != nil {
		if k.D%time.Second != 0 || k.D > maxKeepalive {
			b.errs.add(pc.at("persistent-keepalive"), path+".persistent-keepalive", "expected whole seconds from 0 (off) to 65535s, found %s", k.D)
		}
		p.Keepalive = k.D
	}
	for _, e := range pc.Endpoints {
		if e != nil {
			p.Endpoints = append(p.Endpoints, e.S)
		}
	}
	return p, ok
}

// checkEndpoint accepts "192.0.2.1:51820", "[2001:db8::1]:51820" and "host.example:51820".
func checkEndpoint(e string) error {
	// Made only for a bad one: a file of ten thousand peers has ten
	// thousand good ones.
	bad := func() error {
		return fmt.Errorf("expected ADDRESS:PORT like 192.0.2.1:51820, [2001:db8::1]:51820 or node1.example.com:51820, found %q", e)
	}
	host, port, err := net.SplitHostPort(e)
	if err != nil || host == "" {
		return bad()
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return bad()
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return nil
	}
	if strings.Contains(host, ":") || strings.ContainsAny(host, " /%") {
		return bad()
	}
	return nil
}

// resolvePath makes a relative key path relative to the file that names it.
func resolvePath(file, p string) string {
	if filepath.IsAbs(p) || file == "" {
		return p
	}
	return filepath.Join(filepath.Dir(file), p)
}

// looksLikeKey reports whether a value meant to name a key file or
// credential is a WireGuard key itself (44 characters of base64 for 32
// bytes): errors about it must then not quote it.
func looksLikeKey(v string) bool {
	if len(v) != 44 {
		return false
	}
	b, err := base64.StdEncoding.DecodeString(v)
	return err == nil && len(b) == 32
}

// maxKeyFile bounds what is read of a key file: a key is 45 bytes with its
// newline; a few KiB leave room for comments and whitespace, and a huge file
// (or /dev/zero swapped in) is not read to the end.
const maxKeyFile = 4096

// readKey reads a key file as wg(8) writes it (base64, one line). The file
// is opened once and everything is checked on that descriptor: O_NOFOLLOW
// (a symlink is refused, not followed to wherever it points now),
// O_NONBLOCK (a FIFO put in its place must not hang validate, which would
// then ignore SIGTERM), fstat (a regular file), the access rule
// (CheckKeyAccess, keyperm.go: nobody but its owner and the service may
// read it), and a bounded read. Stat then open by path again would check
// one file and read another.
// Errors never quote the content.
func readKey(path string) (model.Secret, error) {
	f, err := openNoFollow(path)
	if errors.Is(err, fs.ErrNotExist) {
		return model.Secret{}, fmt.Errorf("key file %s does not exist", path)
	}
	if isSymlinkErr(err) {
		return model.Secret{}, fmt.Errorf("key file %s is a symlink, which is not followed: give the path of the file itself", path)
	}
	if err != nil {
		return model.Secret{}, fmt.Errorf("key file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return model.Secret{}, fmt.Errorf("key file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return model.Secret{}, fmt.Errorf("key file %s is not a regular file", path)
	}
	// Judged on the descriptor that is read (keyperm.go).
	a, err := KeyAccessOf(f)
	if err != nil {
		return model.Secret{}, err
	}
	if err := CheckKeyAccess(path, a, CurrentCaller()); err != nil {
		return model.Secret{}, err
	}
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return model.Secret{}, fmt.Errorf("key file: %w", err)
	}
	if len(data) > maxKeyFile {
		return model.Secret{}, fmt.Errorf("key file %s is larger than %d bytes: it does not hold a WireGuard key", path, maxKeyFile)
	}
	b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(b) != model.KeyLen {
		return model.Secret{}, fmt.Errorf("key file %s does not hold a WireGuard key (base64 of 32 bytes, as wg genkey writes it)", path)
	}
	// The kernel takes the all-zero key for none: as a private key it
	// leaves the device without one, as a preshared key it clears the
	// peer's. The device would never hold what the file says, and every
	// pass would write it again.
	if [model.KeyLen]byte(b) == ([model.KeyLen]byte{}) {
		return model.Secret{}, fmt.Errorf("key file %s holds the all-zero key, which the kernel takes for no key: write one of wg genkey (or wg genpsk), or leave the key out", path)
	}
	return model.NewSecret([model.KeyLen]byte(b)), nil
}
