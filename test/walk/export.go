package walk

// Entry points for the transaction walk (test/txwalk), which checks the
// kernel after each transaction with this package's generator and oracle.

// DumpForeign renders the foreign objects of a reading (dumpForeign): links
// named f*, their addresses, routes and rules of other protocols, nftables
// tables other than the walk's; and the addresses on lo.
func DumpForeign(k *Kernel, proto int, foreignTables, adopted map[string]bool) (string, []string) {
	return dumpForeign(k, proto, foreignTables, adopted)
}

// SysctlBaseline reads the walk's global sysctls as a fresh namespace has
// them, for CompareSysctls.
func SysctlBaseline(ns string) (map[string]string, error) { return sysctlBaseline(ns) }

// Shell runs a shell command in the namespace ns (ForeignPlan's commands).
func Shell(ns, cmd string) error { return shell(ns, cmd) }

// LineDiff lists the lines two sorted dumps differ by.
func LineDiff(a, b string) string { return lineDiff(a, b) }
