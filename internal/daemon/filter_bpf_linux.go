package daemon

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// attachPrefilter puts prog on the socket fd, replacing the one it had;
// nil takes it off (everything passes).
func attachPrefilter(fd int, prog []bpf.Instruction) error {
	if prog == nil {
		err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DETACH_FILTER, 0)
		if errors.Is(err, unix.ENOENT) { // none attached
			err = nil
		}
		return err
	}
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return fmt.Errorf("assemble route prefilter: %w", err)
	}
	fs := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		fs[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(fs)), Filter: &fs[0]})
}
