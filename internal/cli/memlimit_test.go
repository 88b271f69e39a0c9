package cli

import (
	"testing"

	"github.com/netreconcile/netreconcile/internal/daemon"
)

// --memory-limit: auto, off, or a size; auto steps back for GOMEMLIMIT.
func TestParseMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		in, env string
		want    int64
		bad     bool
	}{
		{in: "auto", want: daemon.MemoryLimitAuto},
		{in: "auto", env: "300MiB", want: daemon.MemoryLimitOff},
		{in: "off", want: daemon.MemoryLimitOff},
		{in: "200M", env: "300MiB", want: 200 << 20},
		{in: "200MiB", want: 200 << 20},
		{in: "200MB", want: 200 << 20},
		{in: "1G", want: 1 << 30},
		{in: "65536K", want: 64 << 20},
		{in: "134217728", want: 128 << 20},
		{in: "1M", bad: true},
		{in: "0", bad: true},
		{in: "-5M", bad: true},
		{in: "M", bad: true},
		{in: "200T", bad: true},
		{in: "200KM", bad: true},
		{in: "9223372036854775807G", bad: true},
		{in: "", bad: true},
	} {
		got, err := parseMemoryLimit(c.in, c.env)
		if (err != nil) != c.bad || (!c.bad && got != c.want) {
			t.Errorf("parseMemoryLimit(%q, GOMEMLIMIT=%q) = %d, %v; want %d, error %v", c.in, c.env, got, err, c.want, c.bad)
		}
	}
}
