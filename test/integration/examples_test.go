package integration

import (
	"strings"
	"testing"
)

// The examples this kernel can hold as they are, applied twice: the second
// apply changes nothing. The others need kinds the guest has and are
// applied twice there (test/e2e: kubespan, coil, konnectivity, ipvlan,
// router); demo.yaml has tests of its own here.
func TestExamplesApplyTwice(t *testing.T) {
	for _, name := range []string{"ipam.yaml"} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			f := "../../examples/" + name
			e.apply(f)
			if r := e.cli("apply", "-c", f); r.Code != 0 || !strings.Contains(r.Stdout, "No changes") {
				t.Fatalf("second apply of %s: exit %d\n%s%s", name, r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}
