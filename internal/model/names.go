package model

import "strings"

// The rules of names that come from more than one place: the configuration
// (internal/desired checks them, with positions), and the state directory's
// records (the ledger), which are checked again when they are loaded, since
// the directory may belong to another user than the reader.

// IfnameMax is IFNAMSIZ less the terminating NUL: the kernel counts bytes,
// not characters, so "brücke-eins-zw" (15 characters, 16 bytes) is too long.
const IfnameMax = 15

// ValidIfname accepts the names the kernel's dev_valid_name accepts and
// keeps, less those no terminal can show: 1 to 15 bytes, not "." or "..",
// no '/', ':' or byte its isspace() calls white space (which includes
// 0xa0, a byte of many UTF-8 characters such as "à"), no '%' (the kernel
// takes a name with '%' as a template, "br%d", and makes up a new name each
// time, so the file could never name the link it gets), no NUL (it would
// cut the name short) and no other control character (C0, DEL): a name
// netreconcile creates is printed in plans, errors and logs.
func ValidIfname(s string) bool {
	if len(s) == 0 || len(s) > IfnameMax || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c == 0x7f:
			return false
		case c == '/', c == ':', c == '%', c == ' ', c == 0xa0:
			return false
		}
	}
	// C1 controls, encoded in UTF-8 (U+0080 to U+009F).
	return !strings.ContainsAny(s, "\u0080\u0081\u0082\u0083\u0084\u0085\u0086\u0087\u0088\u0089\u008a\u008b\u008c\u008d\u008e\u008f"+
		"\u0090\u0091\u0092\u0093\u0094\u0095\u0096\u0097\u0098\u0099\u009a\u009b\u009c\u009d\u009e\u009f")
}

// IfnameRule says what ValidIfname accepts, for error messages.
const IfnameRule = "1 to 15 bytes, without '/', ':', '%', white space or control characters, and not \".\" or \"..\""

// ValidNftName reports whether nft accepts s unquoted as a table, chain or
// set name.
func ValidNftName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i, c := range s {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (i == 0 || !(c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.')) {
			return false
		}
	}
	return true
}

// SysctlKeyRule says what ValidSysctlKey accepts: the kernel's names are
// made of these, and link names as ip(8) allows them (a dot written '/').
const SysctlKeyRule = "letters, digits, '_', '-', '/', ':', '@' and '+', in non-empty parts separated by dots, no part \"/\" or \"//\""

// ValidSysctlKey reports whether key is a dotted sysctl name whose file
// (SysctlPath) stays where its parts say: no part is empty, and none is
// "/" or "//", which SysctlPath turns into "." and "..", so that
// net.//.//.kernel.x would name /proc/sys/kernel/x.
func ValidSysctlKey(key string) bool {
	if len(key) > 1024 {
		return false
	}
	for _, p := range strings.Split(key, ".") {
		if p == "" || p == "/" || p == "//" {
			return false
		}
		for _, r := range p {
			switch {
			case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			case strings.ContainsRune("_-/:@+", r):
			default:
				return false
			}
		}
	}
	return true
}
