package txwalk

import (
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/netreconcile/netreconcile/test/walk"
)

// Step is one thing the walk does. A sequence of steps is drawn from the
// seed before it runs, so that a replay (the shrinker's) does the same.
type Step struct {
	Op string
	// V is the version an edit writes, or a --candidate's main file
	// (begin with Cand).
	V      int
	Cand   bool
	Window time.Duration
	// Timer is --rollback-timer ("" leaves the default, auto).
	Timer string
	// ID is the id confirm or rollback name: "" none, "pending" the
	// pending one's, "other" one that is not pending.
	ID string
	// Kill, when not zero, SIGKILLs the command after that long;
	// KillWhat (service mode) says which process: root's, the service
	// user's child, or both.
	Kill     time.Duration
	KillWhat string
	Edit     edit
	// Sig stops the daemon: TERM or KILL.
	Sig string
	// Hand is the index of a hand edit (handEdits).
	Hand int
	// Sleep is a pause.
	Sleep time.Duration
}

// Ops.
const (
	opEdit        = "edit"         // write version V to the files
	opApply       = "apply"        // a plain apply
	opBegin       = "begin"        // apply --confirm-within
	opConfirm     = "confirm"      //
	opRollback    = "rollback"     //
	opDeadline    = "deadline"     // wait past the pending deadline (plus the bound)
	opSleep       = "sleep"        // let time pass
	opDaemonStart = "daemon-start" // netreconcile run
	opDaemonStop  = "daemon-stop"  //
	// opDaemonPause stops the daemon (SIGSTOP) between two passes and
	// opDaemonResume continues it: the commands between run before the
	// daemon's next pass (a confirm and the next begin, say, which a
	// daemon that wakes at once usually separates).
	opDaemonPause  = "daemon-pause"
	opDaemonResume = "daemon-resume"
	opHand         = "hand"        // the kernel edited by hand
	opHolderExit   = "holder-exit" // the process --netns /proc/PID/ns/net names exits
	opReboot       = "reboot"      // a new boot id
	// opBadCand is apply --confirm-within with an invalid --candidate:
	// refused, naming the candidate's own line and column, and nothing
	// changes (no transaction begun or extended).
	opBadCand = "begin-invalid"
)

func (s Step) String() string {
	var b strings.Builder
	b.WriteString(s.Op)
	switch s.Op {
	case opEdit:
		fmt.Fprintf(&b, " v%d (%s)", s.V, []string{"atomic", "in place", "links re-pointed"}[s.Edit])
	case opBegin:
		fmt.Fprintf(&b, " --confirm-within %s", s.Window)
		if s.Cand {
			fmt.Fprintf(&b, " --candidate v%d", s.V)
		}
		if s.Timer != "" {
			fmt.Fprintf(&b, " --rollback-timer %s", s.Timer)
		}
	case opConfirm, opRollback:
		if s.ID != "" {
			fmt.Fprintf(&b, " id=%s", s.ID)
		}
	case opDaemonStop:
		fmt.Fprintf(&b, " SIG%s", s.Sig)
	case opHand:
		fmt.Fprintf(&b, " %s", handEdits[s.Hand%len(handEdits)].what)
	case opSleep:
		fmt.Fprintf(&b, " %s", s.Sleep)
	}
	if s.Kill > 0 {
		fmt.Fprintf(&b, " (SIGKILL after %s", s.Kill)
		if s.KillWhat != "" && s.KillWhat != "root" {
			fmt.Fprintf(&b, ", %s", s.KillWhat)
		}
		b.WriteString(")")
	}
	return b.String()
}

// Sequence is a walk: its mode, versions and steps.
type Sequence struct {
	Mode     Mode
	Layout   Layout
	PeerNS   string
	Foreign  []string
	Versions []*Version
	Steps    []Step
}

// handEdit is a change made by hand in the namespace during a window: of
// objects netreconcile owns (kept by the walk's own fragments, or any of
// the namespace's links), or new foreign ones.
type handEdit struct {
	what string
	// owned: it changes what netreconcile owns (the kernel no longer
	// matches the files until someone converges).
	owned bool
	// cmd makes the change; n is a number for names.
	cmd func(n int) string
}

var handEdits = []handEdit{
	{"a foreign bridge", false, func(n int) string {
		return fmt.Sprintf("ip link add fh%d type bridge && ip link set fh%d up", n, n)
	}},
	{"a foreign route", false, func(n int) string {
		return fmt.Sprintf("ip route add blackhole 10.249.%d.0/24 proto static", n%250)
	}},
	{"a foreign rule", false, func(n int) string {
		return fmt.Sprintf("ip rule add priority %d from 10.248.%d.0/24 lookup 4000 proto static", 20000+n, n%250)
	}},
	{"a foreign nftables table", false, func(n int) string {
		return fmt.Sprintf("nft add table inet fh%d", n)
	}},
	{"owned routes deleted", true, func(int) string {
		// A table with no route is no table to flush.
		return "ip route flush table 3001 2>/dev/null; ip route flush table 3002 2>/dev/null; true"
	}},
	{"the owned set flushed", true, func(int) string {
		return "nft flush set inet nrwtx s 2>/dev/null; true"
	}},
	{"an owned link's MTU changed", true, func(int) string {
		// Links netreconcile made carry its alias marker.
		return `for l in $(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1); do case $l in f*|lo) ;; *) ip link set "$l" mtu 1280 2>/dev/null && exit 0;; esac; done; true`
	}},
	{"an owned link deleted", true, func(int) string {
		return `for l in $(ip -o link show type bridge | awk -F': ' '{print $2}' | cut -d@ -f1); do case $l in f*) ;; *) ip link del "$l" && exit 0;; esac; done; true`
	}},
}

// draw makes a sequence of n steps from r: a mode, a layout (drawn by the
// rig from the same source) and versions from test/walk's generator.
type drawer struct {
	r *rand.Rand
	g *walk.Gen
	// bad draws the invalid candidates from a sequence of its own, so
	// that a seed's other steps stay as they were; hold, likewise, the
	// daemon's pauses before a confirm and the long windows.
	bad  *rand.Rand
	hold *rand.Rand
	seq  *Sequence
	mode Mode
	// What the drawer expects, to make likely sequences (the run
	// decides what happens): whether a transaction is pending, whether
	// the daemon runs, the version on the disk.
	pending bool
	daemon  bool
	paused  bool
	disk    int
	adopt   bool
	// lastBegin is the index of the last begin step drawn (-1: none).
	lastBegin int
}

// longWindow is the window of a begin whose files the drawer edits in the
// window while a daemon runs: long enough for a confirm in time after the
// daemon applied the edit, on a loaded machine.
const longWindow = 30 * time.Second

func (d *drawer) newVersion(from *Version) *Version {
	c := from.C.Clone()
	c, _ = d.g.Next(c)
	scrub(d.g, c, d.adopt, d.mode)
	return newVersion(len(d.seq.Versions), c, d.r)
}

func (d *drawer) candidate(from *Version) *Version {
	c, _ := d.g.Next(from.C.Clone())
	scrub(d.g, c, d.adopt, d.mode)
	return from.withMain(len(d.seq.Versions), c)
}

func (d *drawer) add(v *Version) int {
	d.seq.Versions = append(d.seq.Versions, v)
	return v.N
}

func (d *drawer) window() time.Duration {
	// A second or two: the walk passes many deadlines.
	return time.Duration(1+d.r.Intn(2)) * time.Second
}

func (d *drawer) kill() (time.Duration, string) {
	if d.r.Intn(5) != 0 {
		return 0, ""
	}
	// Most commands take 30 ms to a second here: anywhere in them.
	k := time.Duration(1+d.r.Intn(600)) * time.Millisecond
	if d.r.Intn(3) == 0 {
		k = time.Duration(1+d.r.Intn(60)) * time.Millisecond
	}
	what := "root"
	if d.mode.Service {
		what = []string{"root", "child", "both"}[d.r.Intn(3)]
	}
	return k, what
}

func (d *drawer) step() Step {
	disk := d.seq.Versions[d.disk]
	x := d.r.Intn(100)
	if !d.pending {
		switch {
		case x < 12:
			v := d.add(d.newVersion(disk))
			d.disk = v
			return Step{Op: opEdit, V: v, Edit: edit(d.r.Intn(3))}
		case x < 20:
			k, w := d.kill()
			return Step{Op: opApply, Kill: k, KillWhat: w}
		case x < 62:
			s := Step{Op: opBegin, Window: d.window()}
			s.Kill, s.KillWhat = d.kill()
			if d.r.Intn(10) == 0 {
				s.Timer = []string{"process", "daemon", "auto"}[d.r.Intn(3)]
			}
			if d.r.Intn(3) != 0 {
				s.Cand = true
				s.V = d.add(d.candidate(disk))
			}
			d.pending = true
			return s
		}
	} else {
		switch {
		case x < 18:
			k, w := d.kill()
			d.pending = k > 0
			return Step{Op: opConfirm, ID: d.idArg(), Kill: k, KillWhat: w}
		case x < 32:
			k, w := d.kill()
			d.pending = k > 0
			return Step{Op: opRollback, ID: d.idArg(), Kill: k, KillWhat: w}
		case x < 44 && d.paused:
			// A paused daemon holds no deadline: it goes on first.
			d.paused = false
			return Step{Op: opDaemonResume}
		case x < 44:
			d.pending = false
			return Step{Op: opDeadline}
		case x < 52:
			s := Step{Op: opBegin, Window: d.window()}
			s.Kill, s.KillWhat = d.kill()
			if d.r.Intn(2) == 0 {
				s.Cand = true
				s.V = d.add(d.candidate(disk))
			} else if d.r.Intn(2) == 0 {
				// Files edited in the window, then applied inside it.
				v := d.add(d.newVersion(disk))
				d.disk = v
				d.seq.Steps = append(d.seq.Steps, Step{Op: opEdit, V: v, Edit: edit(d.r.Intn(3))})
			}
			return s
		case x < 60:
			return Step{Op: opHand, Hand: d.r.Intn(len(handEdits))}
		case x < 63:
			k, w := d.kill()
			return Step{Op: opApply, Kill: k, KillWhat: w}
		}
	}
	switch {
	case x < 70:
		v := d.add(d.newVersion(disk))
		d.disk = v
		return Step{Op: opEdit, V: v, Edit: edit(d.r.Intn(3))}
	case x < 78 && d.paused:
		d.paused = false
		return Step{Op: opDaemonResume}
	case x < 78:
		d.daemon = !d.daemon
		if d.daemon {
			return Step{Op: opDaemonStart}
		}
		return Step{Op: opDaemonStop, Sig: []string{"TERM", "KILL"}[d.r.Intn(2)]}
	case x < 84:
		return Step{Op: opHand, Hand: d.r.Intn(len(handEdits))}
	case x < 90 && (d.mode.Form == formProc || d.mode.Form == formProcAno):
		return Step{Op: opHolderExit}
	case x < 93:
		d.paused = false
		return Step{Op: opReboot}
	}
	return Step{Op: opSleep, Sleep: time.Duration(100+d.r.Intn(900)) * time.Millisecond}
}

func (d *drawer) idArg() string {
	switch d.r.Intn(6) {
	case 0:
		return ""
	case 1:
		return "other"
	}
	return "pending"
}
