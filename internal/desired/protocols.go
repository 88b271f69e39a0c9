package desired

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
)

// protocolsFile is the system's protocol database: nft resolves protocol
// names through it (getprotobyname), so an inet_proto element "ipip" is
// what the host's file says (94 on Debian), not what a table of ours would.
var protocolsFile = "/etc/protocols"

var (
	protocolsOnce sync.Once
	protocols     map[string]uint8
)

// protocolNumber resolves a protocol name (or alias) as the host's
// /etc/protocols gives it; numbers are the caller's.
func protocolNumber(name string) (uint8, bool) {
	protocolsOnce.Do(func() {
		protocols = map[string]uint8{}
		f, err := os.Open(protocolsFile)
		if err != nil {
			return
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			fs := strings.Fields(line)
			if len(fs) < 2 {
				continue
			}
			n, err := strconv.ParseUint(fs[1], 10, 8)
			if err != nil {
				continue
			}
			for _, name := range append([]string{fs[0]}, fs[2:]...) {
				if _, dup := protocols[name]; !dup {
					protocols[name] = uint8(n)
				}
			}
		}
	})
	p, ok := protocols[name]
	return p, ok
}
