package daemon

import (
	"log/slog"
	"strings"

	sd "github.com/coreos/go-systemd/v22/daemon"
)

// Notify messages (sd_notify(3)).
const (
	sdReady    = "READY=1"
	sdStopping = "STOPPING=1"
	sdWatchdog = "WATCHDOG=1"
)

// Notifier sends sd_notify(3) messages. The default sends them to
// $NOTIFY_SOCKET and does nothing when the variable is unset.
type Notifier interface {
	Notify(state string)
}

type sdNotifier struct{ log *slog.Logger }

func (n sdNotifier) Notify(state string) {
	if _, err := sd.SdNotify(false, state); err != nil {
		n.log.Warn("systemd notification failed", "state", strings.SplitN(state, "=", 2)[0], "error", err)
	}
}

// SystemdNotifier notifies the service manager through $NOTIFY_SOCKET.
func SystemdNotifier(log *slog.Logger) Notifier { return sdNotifier{log} }

// reloadingMsg is the message for Type=notify-reload: RELOADING=1 with the
// monotonic time the reload began, which systemd requires to tell this
// reload from an earlier one.
func reloadingMsg() string {
	return sd.SdNotifyReloading + "\n" + sd.SdNotifyMonotonicUsec()
}
