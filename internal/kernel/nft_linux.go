package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	"github.com/netreconcile/netreconcile/internal/model"
)

// nftSockBuf sizes the nftables socket's buffers when it opens, as Talos
// does (8 MiB): the kernel refuses a batch larger than the send buffer
// (EMSGSIZE), and charges every message's ACK against the receive buffer
// (ENOBUFS). A 100k-element interval set is about 2.5 MB of batch and 200
// ACKs; a batch that needs more gets more (sizeNFTBuffers). The FORCE
// variants pass net.core.{w,r}mem_max, which caps plain SO_SNDBUF at
// ~200 KiB.
var nftSockBuf = 8 << 20

// nftAckSize is what the receive buffer is charged for one message's
// acknowledgement: nft sizes its buffer at 1 KiB per command for the same
// reason (mnl_batch_talk).
const nftAckSize = 1024

// nftMaxBuf is the largest buffer SO_SNDBUFFORCE takes (the kernel caps
// the value at INT_MAX/2 and doubles it): a batch the estimate puts above
// it is sent anyway, and the kernel decides.
const nftMaxBuf = 1<<30 - 1

// nftChunk bounds the elements of one NEWSETELEM/DELSETELEM message: the
// element list is one netlink attribute, whose length is a uint16 (64 KiB).
// An IPv6 interval (start and end elements) takes about 64 bytes, so 512
// intervals use half of it. google/nftables v0.3.0 does not split lists.
const nftChunk = 512

// User data types of our rule marker. nft ignores types it does not know
// (it reads 0, the comment, and 1), so the marker does not show in
// `nft list` and a golden ruleset lists the same.
const (
	udataRuleID   userdata.Type = 0xe0
	udataRuleText userdata.Type = 0xe1
)

// nftRuleTextMax keeps the marker inside NFT_USERDATA_MAXLEN (256 bytes):
// longer canonical texts are identified by their hash alone.
const nftRuleTextMax = 200

var nftFamilies = map[string]nftables.TableFamily{
	"ip": nftables.TableFamilyIPv4, "ip6": nftables.TableFamilyIPv6, "inet": nftables.TableFamilyINet,
	"arp": nftables.TableFamilyARP, "bridge": nftables.TableFamilyBridge, "netdev": nftables.TableFamilyNetdev,
}

func nftFamilyName(f nftables.TableFamily) string {
	for n, v := range nftFamilies {
		if v == f {
			return n
		}
	}
	return fmt.Sprint(int(f))
}

// Hook numbers per family: ip, ip6, inet and bridge share NF_INET_*; arp and
// netdev number their own.
var nftHookNums = map[string]map[string]uint32{
	"inet":   {"prerouting": 0, "input": 1, "forward": 2, "output": 3, "postrouting": 4},
	"arp":    {"input": 0, "output": 1},
	"netdev": {"ingress": 0, "egress": 1},
}

func nftHooks(family string) map[string]uint32 {
	if h, ok := nftHookNums[family]; ok {
		return h
	}
	return nftHookNums["inet"]
}

var nftSetTypes = map[string]nftables.SetDatatype{
	model.NftIPv4: nftables.TypeIPAddr, model.NftIPv6: nftables.TypeIP6Addr, model.NftService: nftables.TypeInetService,
	model.NftMark: nftables.TypeMark, model.NftProto: nftables.TypeInetProto,
}

// nft returns the nftables connection, opened on first use in the kernel's
// namespace.
func (k *Netlink) nft() (*nftables.Conn, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.nftConn != nil {
		return k.nftConn, nil
	}
	opts := []nftables.ConnOption{nftables.AsLasting(), nftables.WithSockOptions(func(c *netlink.Conn) error {
		k.nftRaw = c
		return k.setNFTBuffers(nftSockBuf, nftSockBuf)
	}, primeDumps)}
	if k.ns.IsOpen() {
		opts = append(opts, nftables.WithNetNSFd(int(k.ns)))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("open nftables: %w", err)
	}
	k.nftConn = c
	return c, nil
}

// setNFTBuffers sets the nftables socket's send and receive buffers. The
// FORCE variants need CAP_NET_ADMIN; without it, the buffers are what
// net.core.wmem_max and rmem_max allow, and a batch larger than that fails
// with EMSGSIZE (NFTApply says so).
func (k *Netlink) setNFTBuffers(snd, rcv int) error {
	rc, err := k.nftRaw.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, snd); serr != nil {
			return
		}
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, rcv)
	}); err != nil {
		return err
	}
	if serr != nil {
		if err := k.nftRaw.SetWriteBuffer(snd); err != nil {
			return err
		}
		if err := k.nftRaw.SetReadBuffer(rcv); err != nil {
			return err
		}
	}
	k.nftSnd, k.nftRcv = snd, rcv
	return nil
}

// sizeNFTBuffers makes the socket's buffers take a batch of at most bytes
// in msgs messages, as nft does (mnl_batch_talk): the send buffer the
// whole batch, which goes in one sendmsg and is one transaction, and the
// receive buffer an acknowledgement per message. Buffers only grow: their
// size is a limit the kernel charges what is queued against, not memory
// held, so a socket that once sent a 1M-element set keeps its limits.
func (k *Netlink) sizeNFTBuffers(bytes, msgs int) error {
	snd := min(max(bytes, nftSockBuf), nftMaxBuf)
	rcv := min(max(msgs*nftAckSize, nftSockBuf), nftMaxBuf)
	if snd <= k.nftSnd && rcv <= k.nftRcv {
		return nil
	}
	return k.setNFTBuffers(max(snd, k.nftSnd), max(rcv, k.nftRcv))
}

// Bounds of a batch's messages for sizeNFTBuffers, from the encoding of
// google/nftables v0.3.0. nftMsgBound is a message without elements or
// expressions: the netlink and nfgen headers, names of up to 256 bytes
// (NFT_NAME_MAXLEN) for the table, the chain or set and a chain's device,
// and the fixed-size attributes. nftElemBound is one element without its
// key: the list entry, the key's nest and value headers, and the flags of
// an interval's end.
const (
	nftMsgBound  = 2 << 10
	nftElemBound = 4 + 4 + 4 + 8
)

// align4 rounds n up to a netlink attribute's alignment.
func align4(n int) int { return (n + 3) &^ 3 }

// primeDumps makes the kernel fill dump messages up to 32 KiB instead of one
// page. The kernel sizes a dump's messages by the largest buffer the socket
// has read with (max_recvmsg_len, capped at 32 KiB), and mdlayher/netlink
// first reads with one page. Interval sets are rbtrees whose dump restarts
// from the first element at every message, so reading 200k elements costs
// O(n²/elements per message): 17 s with 4 KiB messages, 8 times less with
// 32 KiB. One GETGEN request answered into a 32 KiB buffer sets the size.
func primeDumps(c *netlink.Conn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	req := make([]byte, unix.NLMSG_HDRLEN+4)
	binary.NativeEndian.PutUint32(req[0:], uint32(len(req)))
	binary.NativeEndian.PutUint16(req[4:], uint16(unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_GETGEN))
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	var werr error
	if err := rc.Write(func(fd uintptr) bool {
		_, werr = unix.Write(int(fd), req)
		return werr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("prime nftables dumps: %w", werr)
	}
	buf := make([]byte, 32<<10)
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		_, rerr = unix.Read(int(fd), buf)
		return rerr != unix.EAGAIN
	}); err != nil {
		return err
	}
	if rerr != nil {
		return fmt.Errorf("prime nftables dumps: %w", rerr)
	}
	return nil
}

// nftGen returns the ruleset generation: the kernel counts every committed
// nftables transaction, whoever made it.
func (k *Netlink) nftGen() (uint32, error) {
	if _, err := k.nft(); err != nil {
		return 0, err
	}
	msgs, err := k.nftRaw.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETGEN), Flags: netlink.Request},
		Data:   []byte{unix.AF_UNSPEC, unix.NFNETLINK_V0, 0, 0},
	})
	if err != nil {
		return 0, fmt.Errorf("get nftables generation: %w", err)
	}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return 0, err
		}
		ad.ByteOrder = binary.BigEndian
		for ad.Next() {
			if ad.Type() == unix.NFTA_GEN_ID {
				return ad.Uint32(), nil
			}
		}
	}
	return 0, errors.New("get nftables generation: no generation in the answer")
}

// nftaTableHandle is NFTA_TABLE_HANDLE (include/uapi/linux/netfilter/
// nf_tables.h; since Linux 4.17): golang.org/x/sys/unix does not name it.
const nftaTableHandle = 4

// NFTTableHandle returns the kernel's handle of a table, 0 when it does not
// exist. One GETTABLE request for the table by name: google/nftables v0.3.0
// does not read NFTA_TABLE_HANDLE.
func (k *Netlink) NFTTableHandle(key model.NftTableKey) (uint64, error) {
	h, _, err := k.nftTableInfo(key)
	return h, err
}

// nftTableInfo returns a table's handle (0 when it does not exist) and its
// NFTA_TABLE_FLAGS.
func (k *Netlink) nftTableInfo(key model.NftTableKey) (handle uint64, flags uint32, err error) {
	if _, err := k.nft(); err != nil {
		return 0, 0, err
	}
	fam, ok := nftFamilies[key.Family]
	if !ok {
		return 0, 0, fmt.Errorf("nftables table %s: unknown family", key)
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_TABLE_NAME, key.Name)
	attrs, err := ae.Encode()
	if err != nil {
		return 0, 0, fmt.Errorf("get nftables table %s: %w", key, err)
	}
	msgs, err := k.nftRaw.Execute(netlink.Message{
		Header: netlink.Header{Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETTABLE), Flags: netlink.Request},
		Data:   append([]byte{byte(fam), unix.NFNETLINK_V0, 0, 0}, attrs...),
	})
	if errors.Is(err, unix.ENOENT) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("get nftables table %s: %w", key, err)
	}
	for _, m := range msgs {
		if len(m.Data) < 4 {
			continue
		}
		ad, err := netlink.NewAttributeDecoder(m.Data[4:])
		if err != nil {
			return 0, 0, fmt.Errorf("get nftables table %s: %w", key, err)
		}
		ad.ByteOrder = binary.BigEndian
		for ad.Next() {
			switch ad.Type() {
			case nftaTableHandle:
				handle = ad.Uint64()
			case unix.NFTA_TABLE_FLAGS:
				flags = ad.Uint32()
			}
		}
		if err := ad.Err(); err != nil {
			return 0, 0, fmt.Errorf("get nftables table %s: %w", key, err)
		}
		if handle != 0 {
			return handle, flags, nil
		}
	}
	return 0, 0, fmt.Errorf("get nftables table %s: no handle in the answer", key)
}

func (k *Netlink) closeNFT() {
	if k.nftConn != nil {
		_ = k.nftConn.CloseLasting()
	}
}

// NFTTable reads one table whole.
func (k *Netlink) NFTTable(key model.NftTableKey) (*model.NftTable, error) {
	c, err := k.nft()
	if err != nil {
		return nil, err
	}
	fam, ok := nftFamilies[key.Family]
	if !ok {
		return nil, fmt.Errorf("nftables table %s: unknown family", key)
	}
	// The generation first, then the table: the cache then stands for a
	// ruleset at gen that the whole read saw (checked again at the end).
	// An absent table validates the cache too, so that the batch that
	// creates it, its sets and their elements is carried forward (applied)
	// rather than dumped again: reading the generation after the table
	// would let a commit in between make a table this read calls absent.
	gen, err := k.nftGen()
	if err != nil {
		return nil, err
	}
	if !k.nftElems.valid || k.nftElems.gen != gen {
		k.nftElems.reset(gen)
	}
	handle, flags, err := k.nftTableInfo(key)
	if err != nil {
		return nil, err
	}
	if handle == 0 {
		if after, err := k.nftGen(); err != nil || after != gen {
			k.nftElems.valid = false
		}
		return nil, nil
	}
	nt := &nftables.Table{Name: key.Name, Family: fam}
	read := map[nftSetKey][]model.NftElem{}
	t := &model.NftTable{Family: key.Family, Name: key.Name, Handle: handle, Dormant: flags&unix.NFT_TABLE_F_DORMANT != 0}
	// The rules first: a set a rule changes from the packet path (add @s,
	// update @s, delete @s) changes without a commit, whatever its flags
	// (the kernel takes such a rule on a set without the dynamic flag).
	fromPackets := map[string]bool{}
	chains, err := c.ListChainsOfTableFamily(fam)
	if err != nil {
		return nil, fmt.Errorf("list chains of table %s: %w", key, err)
	}
	for _, ch := range chains {
		if ch.Table == nil || ch.Table.Name != key.Name {
			continue
		}
		mc := model.NftChain{Name: ch.Name}
		if ch.Hooknum != nil {
			for name, n := range nftHooks(key.Family) {
				if n == uint32(*ch.Hooknum) {
					mc.Hook = name
				}
			}
			mc.Type = string(ch.Type)
			if ch.Priority != nil {
				mc.Priority = int(*ch.Priority)
			}
			mc.Policy = "accept"
			if ch.Policy != nil && *ch.Policy == nftables.ChainPolicyDrop {
				mc.Policy = "drop"
			}
		}
		rules, err := c.GetRules(nt, ch)
		if err != nil {
			return nil, fmt.Errorf("list rules of chain %s in table %s: %w", ch.Name, key, err)
		}
		for _, r := range rules {
			for _, e := range r.Exprs {
				if d, ok := e.(*expr.Dynset); ok {
					fromPackets[d.SetName] = true
				}
			}
			mr := model.NftRule{Handle: r.Handle}
			if id, ok := userdata.GetString(r.UserData, udataRuleID); ok {
				mr.ID = id
				mr.Text, _ = userdata.GetString(r.UserData, udataRuleText)
			}
			mc.Rules = append(mc.Rules, mr)
		}
		t.Chains = append(t.Chains, mc)
	}
	sets, err := c.GetSets(nt)
	if err != nil {
		return nil, fmt.Errorf("list sets of table %s: %w", key, err)
	}
	for _, s := range sets {
		sk := nftSetKey{key, s.Name}
		cached, ok := k.nftElems.sets[sk]
		// Elements of timeout sets expire, and a dynamic set's rules, or
		// any rule's add @s or delete @s, change it from the packet path,
		// without a new generation: such sets are read every time.
		volatile := s.HasTimeout || s.Dynamic || fromPackets[s.Name]
		ok = ok && !volatile
		ms, err := k.readSet(c, s, !ok)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", key, err)
		}
		switch {
		case ok:
			ms.Elems = cached
		case !volatile:
			read[sk] = ms.Elems
		}
		t.Sets = append(t.Sets, *ms)
	}
	// Keep what was read only if nothing committed during the read.
	if after, err := k.nftGen(); err == nil && after == gen {
		for sk, es := range read {
			k.nftElems.sets[sk] = es
		}
	} else {
		k.nftElems.valid = false
	}
	return t, nil
}

func (k *Netlink) readSet(c *nftables.Conn, s *nftables.Set, elems bool) (*model.NftSet, error) {
	ms := &model.NftSet{Name: s.Name, Type: s.KeyType.Name, Interval: s.Interval, Timeout: s.HasTimeout, DefaultTimeout: s.Timeout}
	if !elems {
		return ms, nil
	}
	els, err := c.GetSetElements(s)
	if err != nil {
		return nil, fmt.Errorf("list elements of set %s: %w", s.Name, err)
	}
	if !s.Interval {
		for _, e := range els {
			ms.Elems = append(ms.Elems, model.NftElem{Key: string(e.Key)})
		}
		model.SortNftElems(ms.Elems)
		return ms, nil
	}
	// Interval sets hold start and end elements; the dump order is the
	// tree's. Sort by key, ends before starts at one key (adjacent ranges),
	// and pair each start with the end that follows it. An end without a
	// start (nft writes one at 0) closes nothing.
	sort.Slice(els, func(i, j int) bool {
		a, b := string(els[i].Key), string(els[j].Key)
		if a != b {
			return a < b
		}
		return els[i].IntervalEnd && !els[j].IntervalEnd
	})
	var open *string
	for _, e := range els {
		key := string(e.Key)
		switch {
		case !e.IntervalEnd:
			if open != nil {
				ms.Elems = append(ms.Elems, model.NftElem{Key: *open, End: key})
			}
			open = &key
		case open != nil:
			ms.Elems = append(ms.Elems, model.NftElem{Key: *open, End: key})
			open = nil
		}
	}
	if open != nil {
		ms.Elems = append(ms.Elems, model.NftElem{Key: *open})
	}
	return ms, nil
}

func nftTable(k model.NftTableKey) *nftables.Table {
	return &nftables.Table{Family: nftFamilies[k.Family], Name: k.Name}
}

func nftSet(t *nftables.Table, s *model.NftSet) *nftables.Set {
	ns := &nftables.Set{Table: t, Name: s.Name, KeyType: nftSetTypes[s.Type], Interval: s.Interval, HasTimeout: s.Timeout, Timeout: s.DefaultTimeout}
	if s.Type == model.NftMark {
		ns.KeyByteOrder = binaryutil.NativeEndian
	}
	return ns
}

func nftChain(t *nftables.Table, c *model.NftChain) *nftables.Chain {
	nc := &nftables.Chain{Table: t, Name: c.Name}
	if c.Base() {
		nc.Hooknum = nftables.ChainHookRef(nftables.ChainHook(nftHooks(nftFamilyName(t.Family))[c.Hook]))
		nc.Priority = nftables.ChainPriorityRef(nftables.ChainPriority(c.Priority))
		nc.Type = nftables.ChainType(c.Type)
		nc.Device = c.Device
		p := nftables.ChainPolicyAccept
		if c.Policy == "drop" {
			p = nftables.ChainPolicyDrop
		}
		nc.Policy = &p
	}
	return nc
}

func elemList(s *model.NftSet, es []model.NftElem) []nftables.SetElement {
	out := make([]nftables.SetElement, 0, 2*len(es))
	for _, e := range es {
		out = append(out, nftables.SetElement{Key: []byte(e.Key)})
		if s.Interval && e.End != "" {
			out = append(out, nftables.SetElement{Key: []byte(e.End), IntervalEnd: true})
		}
	}
	return out
}

// NFTApply sends the ops as one batch.
func (k *Netlink) NFTApply(ops []model.NftOp) error {
	if len(ops) == 0 {
		return nil
	}
	c, err := k.nft()
	if err != nil {
		return err
	}
	var msgs uint64
	// The sets the batch's rules change from the packet path: the cache
	// cannot follow them (applied).
	fromPackets := map[nftSetKey]bool{}
	// ruleBytes are the rules' expressions and user data, encoded.
	ruleBytes := make([]int, len(ops))
	for i := range ops {
		op := &ops[i]
		t := nftTable(op.Table)
		msgs++
		switch op.Op {
		case model.NftAddTable:
			c.AddTable(t)
		case model.NftDelTable:
			c.DelTable(t)
		case model.NftAddSet:
			if err := c.AddSet(nftSet(t, op.Set), nil); err != nil {
				return fmt.Errorf("add set %s to table %s: %w", op.Set.Name, op.Table, err)
			}
		case model.NftDelSet:
			c.DelSet(nftSet(t, op.Set))
		case model.NftAddElems, model.NftDelElems:
			s := nftSet(t, op.Set)
			msgs--
			for start := 0; start < len(op.Elems); start += nftChunk {
				chunk := op.Elems[start:min(start+nftChunk, len(op.Elems))]
				f := c.SetAddElements
				if op.Op == model.NftDelElems {
					f = c.SetDeleteElements
				}
				if err := f(s, elemList(op.Set, chunk)); err != nil {
					return fmt.Errorf("elements of set %s in table %s: %w", op.Set.Name, op.Table, err)
				}
				msgs++
			}
		case model.NftAddChain:
			c.AddChain(nftChain(t, op.Chain))
		case model.NftDelChain:
			c.DelChain(nftChain(t, op.Chain))
		case model.NftAddRule, model.NftReplaceRule:
			exprs, err := compileRule(op.Table.Family, op.Rule.Rule)
			if err != nil {
				return fmt.Errorf("rule %q in chain %s of table %s: %w", op.Rule.Text, op.Chain.Name, op.Table, err)
			}
			for _, e := range exprs {
				if d, ok := e.(*expr.Dynset); ok {
					fromPackets[nftSetKey{op.Table, d.SetName}] = true
				}
			}
			ud := userdata.AppendString(nil, udataRuleID, op.Rule.ID)
			if len(op.Rule.Text) <= nftRuleTextMax {
				ud = userdata.AppendString(ud, udataRuleText, op.Rule.Text)
			}
			ruleBytes[i] = 4 + align4(len(ud))
			for _, e := range exprs {
				b, err := expr.Marshal(byte(t.Family), e)
				if err != nil {
					return fmt.Errorf("rule %q in chain %s of table %s: %w", op.Rule.Text, op.Chain.Name, op.Table, err)
				}
				ruleBytes[i] += 2*4 + align4(len(b))
			}
			r := &nftables.Rule{Table: t, Chain: &nftables.Chain{Name: op.Chain.Name, Table: t}, Exprs: exprs, UserData: ud}
			switch {
			case op.Op == model.NftReplaceRule:
				r.Handle = op.Handle
				c.ReplaceRule(r)
			case op.Before != 0:
				r.Position = op.Before
				c.InsertRule(r)
			default:
				c.AddRule(r)
			}
		case model.NftDelRule:
			if err := c.DelRule(&nftables.Rule{Table: t, Chain: &nftables.Chain{Name: op.Chain.Name, Table: t}, Handle: op.Handle}); err != nil {
				return err
			}
		default:
			return fmt.Errorf("nftables: unknown op %d", op.Op)
		}
	}
	k.writes.Add(msgs)
	// The batch's size: the begin and end messages, and per op, its
	// message's fixed part, its elements (an interval's end is an element
	// of its own) and a rule's expressions and user data, as encoded.
	bound := 2 * nftMsgBound
	for i := range ops {
		op := &ops[i]
		bound += nftMsgBound * (1 + len(op.Elems)/nftChunk)
		for _, e := range op.Elems {
			bound += nftElemBound + align4(len(e.Key))
			if e.End != "" {
				bound += nftElemBound + align4(len(e.End))
			}
		}
		bound += ruleBytes[i]
	}
	if err := k.sizeNFTBuffers(bound, int(msgs)+2); err != nil {
		return fmt.Errorf("size the nftables socket for a batch of %d bytes: %w", bound, err)
	}
	before, gerr := k.nftGen()
	if gerr != nil {
		return gerr
	}
	if err := c.Flush(); err != nil {
		k.nftElems.valid = false
		if errors.Is(err, unix.ENOBUFS) || errors.Is(err, unix.EMSGSIZE) {
			return fmt.Errorf("nftables batch of %d messages (at most %d bytes): %w (send and receive buffers of %d and %d bytes too small?)", msgs, bound, err, k.nftSnd, k.nftRcv)
		}
		k.nftElems.valid = false
		return fmt.Errorf("nftables batch of %d messages: %w", msgs, err)
	}
	if gen, err := k.nftGen(); err == nil {
		k.nftElems.applied(ops, fromPackets, before, gen)
	} else {
		k.nftElems.valid = false
	}
	return nil
}
