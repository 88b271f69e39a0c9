package desired

import "testing"

// TestKernelRefusesAtValidation holds input that validation once passed and
// the kernel then refused at apply, after part of the file was applied.
func TestKernelRefusesAtValidation(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
	}{{
		name: "log level and group",
		file: "version: 1\nnftables:\n  inet t:\n    chains:\n      c:\n        rules:\n          - log level warn group 3\n",
		want: "f.yaml:7:28: nftables.inet t.chains.c.rules[0]: log takes a level or a group, not both: a group sends packets to nfnetlink_log, which has no level (the kernel refuses both)",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorsOf(t, src("f.yaml", tc.file)); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
