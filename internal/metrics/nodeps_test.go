package metrics

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The daemon's binary links neither client_golang nor protobuf: with the
// rest of prometheus/* they cost 3.2 MB of resident binary pages and
// 0.55 MB of heap (package doc). Nor net/http and the TLS it brings
// (httpd.go): 1.4 MB more. Tests may use them as an oracle; the binary
// may not.
func TestBinaryLinksNoPrometheus(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool to list the binary's packages")
	}
	cmd := exec.Command(goTool, "list", "-deps", "./cmd/netreconcile")
	cmd.Dir = "../.." // the module's root
	// As `make build` builds it.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/netreconcile: %v\n%s", err, out)
	}
	pkgs := strings.Fields(string(out))
	if len(pkgs) < 50 {
		t.Fatalf("go list -deps listed %d packages, fewer than the binary has:\n%s", len(pkgs), out)
	}
	for _, p := range pkgs {
		for _, banned := range []string{"github.com/prometheus/", "google.golang.org/protobuf/", "net/http", "crypto/tls"} {
			if strings.HasPrefix(p, banned) {
				t.Errorf("the binary links %s", p)
			}
		}
	}
}
