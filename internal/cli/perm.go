package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// explain says what a refused permission needs. The kernel answers a
// missing capability with a bare EPERM ("netlink receive: operation not
// permitted"): the user is told which capability this process lacks
// (reading nftables or WireGuard state, and every change, needs
// CAP_NET_ADMIN; entering another namespace with --netns, CAP_SYS_ADMIN),
// or, for a file or directory it may not use, that root may. An error of
// another kind, or a refusal although the process holds both, is left as
// it is.
func (env *Env) explain(err error) error {
	if err == nil || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &hinted{err, "run as root, or choose a --state-dir or --config this user may use"}
	}
	missing := missingCaps(env.netns)
	if len(missing) == 0 {
		return err
	}
	return &hinted{err, fmt.Sprintf("this needs root, or %s, which this process lacks", strings.Join(missing, " and "))}
}

// hinted is an error with what the user can do about it.
type hinted struct {
	err  error
	hint string
}

// Error puts the hint after a one-line message, or on a line of its own
// after a list (the failed operations of an apply).
func (h *hinted) Error() string {
	msg := h.err.Error()
	if strings.Contains(msg, "\n") {
		return msg + "\n" + h.hint
	}
	return msg + " (" + h.hint + ")"
}
func (h *hinted) Unwrap() error { return h.err }
