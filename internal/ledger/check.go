package ledger

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/statedir"
)

// The ledger is in the namespace's state directory, which the packaged
// service's user owns: when root runs a command there, it is that user's
// input. Every record is checked when the file is loaded, and a file with
// one that fails is refused whole, naming the record and quoting nothing:
// a table name becomes part of what a pass deletes, a sysctl key the file
// a pass writes back, a link name part of plans and messages.

// maxRecords bounds each list: a ledger lists a few tables, ports, links
// being created and sysctls.
const maxRecords = 1 << 16

// maxSysctlValue bounds a recorded value: the longest the kernel prints
// for a net.* key is a few hundred bytes.
const maxSysctlValue = 4096

func (f *fileFormat) check() error {
	if len(f.FouPorts) > maxRecords || len(f.NFTables) > maxRecords || len(f.PendingLinks) > maxRecords ||
		len(f.Sysctls) > maxRecords || len(f.RouteTables) > 256 || len(f.StaticAddrs) > maxRecords || len(f.Seqs) > 6*maxRecords {
		return fmt.Errorf("more than %d records of a kind", maxRecords)
	}
	for i, p := range f.FouPorts {
		if p.Port == 0 {
			return fmt.Errorf("fou_ports[%d].port: 0", i)
		}
	}
	for i, t := range f.NFTables {
		if !slices.Contains(model.NftFamilies, t.Family) {
			return fmt.Errorf("nftables[%d].family: not one of %v", i, model.NftFamilies)
		}
		if !model.ValidNftName(t.Name) {
			return fmt.Errorf("nftables[%d].name: not an nftables name", i)
		}
	}
	for i, n := range f.PendingLinks {
		if !model.ValidIfname(n) {
			return fmt.Errorf("links_pending[%d]: not a link name (%s)", i, model.IfnameRule)
		}
	}
	for i, s := range f.Sysctls {
		if !strings.HasPrefix(s.Key, "net.") || !model.ValidSysctlKey(s.Key) {
			return fmt.Errorf("sysctls[%d].key: not a key under net. (%s)", i, model.SysctlKeyRule)
		}
		if err := statedir.CheckText(fmt.Sprintf("sysctls[%d].original", i), s.Original, maxSysctlValue, false); err != nil {
			return err
		}
	}
	seen := map[int]bool{}
	for i, r := range f.RouteTables {
		if !validProtocol(r.Protocol) || seen[r.Protocol] {
			return fmt.Errorf("route_tables[%d].protocol: not a route protocol (1 to 255), or listed twice", i)
		}
		seen[r.Protocol] = true
		if len(r.Tables) > maxRecords {
			return fmt.Errorf("route_tables[%d].tables: more than %d", i, maxRecords)
		}
		for j, t := range r.Tables {
			if !validTable(t) {
				return fmt.Errorf("route_tables[%d].tables[%d]: not a routing table (1 to 4294967295)", i, j)
			}
		}
	}
	for i, a := range f.StaticAddrs {
		if !model.ValidIfname(a.Link) {
			return fmt.Errorf("static_addresses[%d].link: not a link name (%s)", i, model.IfnameRule)
		}
		if !validPrefix(a.Prefix) {
			return fmt.Errorf("static_addresses[%d].prefix: not an address with its prefix length as netreconcile writes it", i)
		}
	}
	// The counter is bumped by every save: one near the top would wrap.
	if f.Seq > 1<<62 {
		return fmt.Errorf("seq: out of range")
	}
	for k, v := range f.Seqs {
		if !validRecKey(k) {
			return fmt.Errorf("seqs: a key that names no record")
		}
		if v > f.Seq {
			return fmt.Errorf("seqs: a record's number above seq")
		}
	}
	return nil
}

// validRecKey reports whether k is a record's key as fouKey, nftKey,
// pendingKey and sysctlKey write them.
func validRecKey(k string) bool {
	kind, rest, _ := strings.Cut(k, " ")
	switch kind {
	case "fou":
		port, v6, ok := strings.Cut(rest, " ")
		n, err := strconv.ParseUint(port, 10, 16)
		return ok && err == nil && n > 0 && strconv.FormatUint(n, 10) == port && (v6 == "true" || v6 == "false")
	case "nft":
		fam, name, ok := strings.Cut(rest, " ")
		return ok && slices.Contains(model.NftFamilies, fam) && model.ValidNftName(name)
	case "link":
		return model.ValidIfname(rest)
	case "sysctl":
		return strings.HasPrefix(rest, "net.") && model.ValidSysctlKey(rest)
	case "routes":
		p, t, ok := strings.Cut(rest, " ")
		pn, err1 := strconv.Atoi(p)
		tn, err2 := strconv.Atoi(t)
		return ok && err1 == nil && err2 == nil && strconv.Itoa(pn) == p && strconv.Itoa(tn) == t &&
			validProtocol(pn) && (tn == 0 || validTable(tn))
	case "addr":
		link, prefix, ok := strings.Cut(rest, " ")
		return ok && model.ValidIfname(link) && validPrefix(prefix)
	}
	return false
}

// validPrefix: an interface address with its prefix length, in the one
// form netip writes it (so that the file is written back byte for byte).
func validPrefix(s string) bool {
	p, err := netip.ParsePrefix(s)
	return err == nil && p.String() == s
}

// validProtocol: a route protocol a route of ours may carry (rtm_protocol
// is a byte; 0 is RTPROT_UNSPEC).
func validProtocol(p int) bool { return p >= 1 && p <= 255 }

// validTable: a routing table number (RTA_TABLE is a u32; 0 is
// RT_TABLE_UNSPEC).
func validTable(t int) bool { return t >= 1 && int64(t) <= 1<<32-1 }
