package cli

import "golang.org/x/sys/unix"

// missingCaps lists the capabilities a kernel operation of this command
// may need that the process does not hold in its effective set.
func missingCaps(netns bool) []string {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return nil
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	var out []string
	if !has(unix.CAP_NET_ADMIN) {
		out = append(out, "CAP_NET_ADMIN (to read and change the network)")
	}
	if netns && !has(unix.CAP_SYS_ADMIN) {
		out = append(out, "CAP_SYS_ADMIN (to enter the --netns namespace)")
	}
	return out
}
