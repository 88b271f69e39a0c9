package safeapply

import (
	"fmt"
	"os"
	"strings"
)

// bootIDFile is where Linux publishes the boot's random id, new at every boot.
const bootIDFile = "/proc/sys/kernel/random/boot_id"

// BootIDFileEnv names another file to read the boot id from. For tests
// only: they simulate a reboot (the namespace torn down and made again with
// the state directory kept) by changing the file. Never set it in
// production, where it would hide a reboot.
const BootIDFileEnv = "NETRECONCILE_TEST_BOOT_ID_FILE"

// BootID reads the current boot id; getenv is the process's environment.
func BootID(getenv func(string) string) (string, error) {
	p := bootIDFile
	if v := getenv(BootIDFileEnv); v != "" {
		p = v
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}
