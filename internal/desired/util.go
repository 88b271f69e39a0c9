package desired

import (
	"math"
	"sort"

	"github.com/netreconcile/netreconcile/internal/model"
)

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// validIfname: model.ValidIfname.
func validIfname(s string) bool { return model.ValidIfname(s) }

// ifnameRule says what validIfname accepts, for error messages.
const ifnameRule = model.IfnameRule

// validLinkName is validIfname less the names the kernel keeps for itself:
// "all" and "default" name the sysctl directories of every device and of
// new ones (/proc/sys/net/ipv4/conf/all), so register_netdevice refuses a
// link so named with EINVAL. A rule's iif/oif may still say them: a name
// there is only matched, never registered.
func validLinkName(s string) bool {
	return validIfname(s) && s != "all" && s != "default"
}

// linkNameRule says what validLinkName accepts, for error messages.
const linkNameRule = ifnameRule + ", \"all\" or \"default\" (the kernel keeps those)"

// clamp32 narrows a line, column or index for a packed position: a file
// holds at most MaxFileSize bytes, so this saturates only for a value no
// file can hold.
func clamp32(n int) int32 {
	return int32(min(max(n, math.MinInt32), math.MaxInt32))
}
