package desired

import (
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

// ifnameMax is IFNAMSIZ less the terminating NUL: the kernel counts bytes,
// not characters, so "brücke-eins-zw" (15 characters, 16 bytes) is too long.
const ifnameMax = 15

// validIfname accepts exactly the names the kernel's dev_valid_name accepts
// and keeps: 1 to 15 bytes, not "." or "..", no '/', ':' or byte its
// isspace() calls white space (which includes 0xa0, a byte of many UTF-8
// characters such as "à"), and no '%' either: the kernel takes a name with
// '%' as a template ("br%d") and makes up a new name each time, so the file
// could never name the link it gets. A NUL would cut the name short.
func validIfname(s string) bool {
	if len(s) == 0 || len(s) > ifnameMax || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '/', ':', '%', 0, ' ', '\t', '\n', '\v', '\f', '\r', 0xa0:
			return false
		}
	}
	return true
}

// ifnameRule says what validIfname accepts, for error messages.
const ifnameRule = "1 to 15 bytes, without '/', ':', '%' or white space, and not \".\" or \"..\""

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
