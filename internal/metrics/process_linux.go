package metrics

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"syscall"
)

// userHZ is the unit of the times in /proc/<pid>/stat: USER_HZ, 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK) is fixed by
// the kernel ABI, not by CONFIG_HZ).
const userHZ = 100

// NewProcessCollector returns the process' metrics, under the names and
// meanings of client_golang's process collector, read from /proc/self at
// each scrape:
//
//	process_cpu_seconds_total      user and system CPU time (counter)
//	process_resident_memory_bytes  resident set size
//	process_virtual_memory_bytes   virtual memory size
//	process_open_fds               open file descriptors
//	process_max_fds                the soft RLIMIT_NOFILE
//	process_start_time_seconds     start time, Unix seconds
//
// A file that cannot be read leaves its series out of that scrape.
func NewProcessCollector() Collector {
	c := &processCollector{
		cpu:      NewDesc(CounterType, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds."),
		resident: NewDesc(GaugeType, "process_resident_memory_bytes", "Resident memory size in bytes."),
		virtual:  NewDesc(GaugeType, "process_virtual_memory_bytes", "Virtual memory size in bytes."),
		openFDs:  NewDesc(GaugeType, "process_open_fds", "Number of open file descriptors."),
		maxFDs:   NewDesc(GaugeType, "process_max_fds", "Maximum number of open file descriptors."),
		start:    NewDesc(GaugeType, "process_start_time_seconds", "Start time of the process since unix epoch in seconds."),
	}
	// The start time does not change: computed once.
	if st, err := readProcStat(); err == nil {
		if boot, err := bootTime(); err == nil {
			c.startTime = float64(boot) + float64(st.startTicks)/userHZ
		}
	}
	return c
}

type processCollector struct {
	cpu, resident, virtual, openFDs, maxFDs, start *Desc
	startTime                                      float64 // 0: unknown
}

func (c *processCollector) Describe() []*Desc {
	return []*Desc{c.cpu, c.resident, c.virtual, c.openFDs, c.maxFDs, c.start}
}

func (c *processCollector) Collect(e *Emitter) {
	if st, err := readProcStat(); err == nil {
		e.Emit(c.cpu, float64(st.utime+st.stime)/userHZ)
		e.Emit(c.resident, float64(st.rssPages*uint64(os.Getpagesize())))
		e.Emit(c.virtual, float64(st.vsize))
	}
	if n, err := countOpenFDs(); err == nil {
		e.Emit(c.openFDs, float64(n))
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil {
		e.Emit(c.maxFDs, float64(lim.Cur))
	}
	if c.startTime > 0 {
		e.Emit(c.start, c.startTime)
	}
}

// procStat is what this collector reads of /proc/self/stat.
type procStat struct {
	utime, stime, startTicks, vsize, rssPages uint64
}

// readProcStat reads /proc/self/stat (proc(5)): the fields after the
// command name, which is in parentheses and may hold spaces and
// parentheses itself, so the fields start after the last ')'.
func readProcStat() (procStat, error) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return procStat{}, fmt.Errorf("read process stat: %w", err)
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errors.New("read process stat: no ')' after the command")
	}
	// f[0] is field 3 (state) of proc(5).
	f := bytes.Fields(b[i+1:])
	if len(f) < 22 {
		return procStat{}, fmt.Errorf("read process stat: %d fields after the command, want at least 22", len(f))
	}
	var st procStat
	for _, x := range []struct {
		field int // as proc(5) numbers it
		to    *uint64
	}{{14, &st.utime}, {15, &st.stime}, {22, &st.startTicks}, {23, &st.vsize}, {24, &st.rssPages}} {
		v, err := strconv.ParseUint(string(f[x.field-3]), 10, 64)
		if err != nil {
			return procStat{}, fmt.Errorf("read process stat field %d: %w", x.field, err)
		}
		*x.to = v
	}
	return st, nil
}

// bootTime reads the boot time, in Unix seconds, from /proc/stat's btime.
func bootTime() (uint64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("read boot time: %w", err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			t, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read boot time: %w", err)
			}
			return t, nil
		}
	}
	return 0, errors.New("read boot time: no btime in /proc/stat")
}

// countOpenFDs counts the entries of /proc/self/fd, in batches so that a
// process with many descriptors does not hold all their names at once.
// The count includes the descriptor that reads the directory.
func countOpenFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("count open descriptors: %w", err)
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(256)
		n += len(names)
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, fmt.Errorf("count open descriptors: %w", err)
		}
	}
}
