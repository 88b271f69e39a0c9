package daemon

import (
	"runtime"
	"testing"

	"github.com/netreconcile/netreconcile/internal/buildinfo"
)

// netreconcile_build_info is 1 with the version and commit the build
// stamped (internal/buildinfo) and the Go version.
func TestBuildInfo(t *testing.T) {
	mfs, err := NewMetrics().Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"version": buildinfo.Version(), "revision": buildinfo.Commit(), "goversion": runtime.Version()}
	for _, mf := range mfs {
		if mf.GetName() != "netreconcile_build_info" {
			continue
		}
		m := mf.GetMetric()
		if len(m) != 1 || m[0].GetGauge().GetValue() != 1 {
			t.Fatalf("netreconcile_build_info: %v", m)
		}
		got := map[string]string{}
		for _, l := range m[0].GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(want) {
			t.Errorf("labels %v, want %v", got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("label %s = %q, want %q", k, got[k], v)
			}
		}
		return
	}
	t.Error("no netreconcile_build_info")
}
