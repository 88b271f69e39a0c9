package kerneltest

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/kernel"
)

// TestCallsCoverTheInterface: every method of kernel.Interface that can fail
// has its Call, and every Call is a method or a documented write of a batch
// call, so a new method cannot be added to the seam without failure
// injection, and a Call cannot name nothing.
func TestCallsCoverTheInterface(t *testing.T) {
	// Methods that cannot fail in the fake: counters, capabilities, and a
	// lookup of another namespace the fake does not hold.
	noCall := []string{"Writes", "Close", "AddressProtocols", "VethPeer", "WriteRoutes"}
	batch := map[Call]string{CallAddRoute: "WriteRoutes", CallReplaceRoute: "WriteRoutes", CallDeleteRoute: "WriteRoutes", CallConfigureWireGuardPeer: "ConfigureWireGuard"}
	it := reflect.TypeOf((*kernel.Interface)(nil)).Elem()
	names := map[string]bool{}
	for _, c := range Calls {
		if names[c.name] {
			t.Errorf("call %s listed twice", c)
		}
		names[c.name] = true
		if _, ok := it.MethodByName(c.name); !ok {
			if parent, ok := batch[c]; !ok {
				t.Errorf("call %s is no method of kernel.Interface", c)
			} else if _, ok := it.MethodByName(parent); !ok {
				t.Errorf("call %s is a write of %s, which is no method of kernel.Interface", c, parent)
			}
		}
	}
	for i := range it.NumMethod() {
		m := it.Method(i).Name
		if !names[m] && !slices.Contains(noCall, m) {
			t.Errorf("kernel.Interface.%s has no Call: failures cannot be injected into it", m)
		}
	}
}

// TestEveryCallIsConsulted: each Call is checked by some method of the fake,
// so a failure injected on it fires.
func TestEveryCallIsConsulted(t *testing.T) {
	var src strings.Builder
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") || f == "calls.go" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	for _, c := range Calls {
		if !regexp.MustCompile(`\bCall` + c.name + `\b`).MatchString(src.String()) {
			t.Errorf("call %s is never checked by the fake: a failure injected on it cannot fire", c)
		}
	}
}
