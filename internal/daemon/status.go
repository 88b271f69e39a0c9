package daemon

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/inert"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// stats feed the STATUS= line.
type stats struct {
	objects   int
	drift     uint64
	errors    int
	lastPass  time.Time
	lastTook  time.Duration
	firstErr  string
	converged bool
	// held counts the changes held back above max-disruption, and
	// heldText names them (heldSummary).
	held     int
	heldText string
}

func (d *Daemon) notifyStatus() {
	d.opts.Notifier.Notify("STATUS=" + d.Status())
}

// Status is the one-line summary systemctl status shows.
func (d *Daemon) Status() string {
	s := d.stats
	var b strings.Builder
	switch {
	case d.cfgErr != nil:
		fmt.Fprintf(&b, "invalid configuration, enforcing the last good one: %s; ", oneLine(firstConfigError(d.cfgErr)))
	case s.converged:
		b.WriteString("converged: ")
	default:
		b.WriteString("not converged: ")
	}
	fmt.Fprintf(&b, "%d objects, %d drift repaired, %d errors", s.objects, s.drift, s.errors)
	if s.firstErr != "" {
		fmt.Fprintf(&b, " (%s)", oneLine(s.firstErr))
	}
	if s.held > 0 {
		fmt.Fprintf(&b, ", %d changes held (%s)", s.held, oneLine(s.heldText))
	}
	if !s.lastPass.IsZero() {
		fmt.Fprintf(&b, ", last reconcile %s", s.lastPass.Format("2006-01-02 15:04:05"))
	}
	if d.opts.StatusExtra != nil {
		if extra := d.opts.StatusExtra(d.clk.Now()); extra != "" {
			b.WriteString("; " + extra)
		}
	}
	// STATUS= is readable by every local user: nothing that looks like a
	// key leaves here (package redact). systemctl status prints it on a
	// terminal: names from the kernel and the files in an error are made
	// inert (package inert).
	return inert.String(redact.String(b.String()))
}

// firstConfigError returns the first positioned error of an invalid
// configuration (file:line:col: path: message), or the error itself.
func firstConfigError(err error) string {
	var es desired.Errors
	if errors.As(err, &es) && len(es) > 0 {
		if n := desired.ErrorCount(err); n > 1 {
			return fmt.Sprintf("%s (and %d more)", es[0].Error(), n-1)
		}
		return es[0].Error()
	}
	return err.Error()
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	// systemctl status shows one line; keep it readable.
	const maxLen = 300
	if len(s) > maxLen {
		s = s[:maxLen] + "…"
	}
	return s
}
