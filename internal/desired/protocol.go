package desired

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/netreconcile/netreconcile/internal/model"
)

// The route and rule protocol numbers settings.protocol may take: 0-4 are
// the kernel's own (unspec, redirect, kernel, boot, static).
const minProtocol, maxProtocol = 5, 255

// protocolFiles are where iproute2 names protocols: its shipped defaults
// (newer versions keep them under /usr/share) and the administrator's
// files, each with a drop-in directory of *.conf. A variable so that tests
// can point it at their own files.
var protocolFiles = []string{"/usr/share/iproute2/rt_protos", "/etc/iproute2/rt_protos"}

// namedProtocol says who names the protocol number p ("" if nobody): the
// kernel's list, or a line of an iproute2 rt_protos file (where).
func namedProtocol(p int) (name, where string) {
	if n, ok := model.RouteProtocols[p]; ok {
		return n, "the kernel's list of route protocols"
	}
	for _, f := range protocolFiles {
		files := []string{f}
		if more, err := filepath.Glob(f + ".d/*.conf"); err == nil {
			sort.Strings(more)
			files = append(files, more...)
		}
		for _, path := range files {
			// A missing or unreadable file names nothing: iproute2
			// itself skips it.
			data, err := os.ReadFile(path)
			if err != nil {
				continue
			}
			if n := protoInFile(data, p); n != "" {
				return n, path
			}
		}
	}
	return "", ""
}

// protoInFile finds p in an rt_protos file: "NUMBER NAME" lines, the number
// decimal or 0x hex, '#' comments, as iproute2's rtnl_tab_initialize reads.
func protoInFile(data []byte, p int) string {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		n, err := strconv.ParseUint(f[0], 0, 32)
		if err == nil && int(n) == p {
			return f[1]
		}
	}
	return ""
}

// ProtocolNamed reports whether the kernel's list or an iproute2 file
// names the protocol number p: a file may then take it only with
// settings.protocol-override.
func ProtocolNamed(p int) bool {
	name, _ := namedProtocol(p)
	return name != ""
}

// checkProtocol refuses a protocol number that the kernel or iproute2's
// files name, unless the file says it is netreconcile's on this host.
func (b *builder) checkProtocol(s *settingsConf, p int) bool {
	if s.ProtocolOverride {
		return true
	}
	name, where := namedProtocol(p)
	if name == "" {
		return true
	}
	b.errs.add(s.at("protocol"), "settings.protocol", "protocol %d is %q in %s: its routes and rules are another program's, and netreconcile deletes every route and rule of its protocol that the file does not list; choose an unnamed number (the default is 245), or add \"protocol-override: true\" to settings if %d is netreconcile's alone on this host", p, name, where, p)
	return false
}
