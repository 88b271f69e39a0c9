package desired

import (
	"regexp"
	"sort"
)

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// ifnameRe is what the kernel accepts as an interface name (dev_valid_name):
// 1-15 bytes, no '/', ':' or white space; "." and ".." are refused.
var ifnameRe = regexp.MustCompile(`^[^/:\s]{1,15}$`)

func validIfname(s string) bool { return ifnameRe.MatchString(s) && s != "." && s != ".." }
