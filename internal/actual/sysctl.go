package actual

import (
	"fmt"
	"sort"

	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// SysctlKeys are the parameters a read covers: the kernel has thousands,
// and a read lists only those the file declares, the "default" keys that
// new links take the file's per-link keys from, and those the ledger owns
// (with the value to restore, Original).
func SysctlKeys(desired []model.Sysctl, owned map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	add := func(k string) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	for _, s := range desired {
		add(s.Key)
		if _, _, tmpl, ok := model.SysctlLink(s.Key); ok {
			add(tmpl)
		}
	}
	for k := range owned {
		add(k)
	}
	sort.Strings(keys)
	return keys
}

// readSysctls reads the parameters of keys that the kernel has; the
// ledger's records say which are ours. Sysctls send no notifications: they
// are read on every pass.
func readSysctls(k kernel.Reader, st *model.State, keys []string, owned map[string]string) error {
	st.Sysctls = nil
	if len(keys) == 0 {
		return nil
	}
	vals, err := k.Sysctls(keys)
	if err != nil {
		return fmt.Errorf("read sysctls: %w", err)
	}
	for _, key := range keys {
		v, ok := vals[key]
		if !ok {
			continue
		}
		s := model.Sysctl{Key: key, Value: model.NormalizeSysctl(v)}
		s.Link, _, _, _ = model.SysctlLink(key)
		s.Original, s.Owned = owned[key]
		st.Sysctls = append(st.Sysctls, s)
	}
	return nil
}
