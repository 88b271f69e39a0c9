package cli

import (
	"strings"
	"testing"
)

// The web configuration secures the metrics listener: without one it is a
// usage error, found before anything is opened.
func TestMetricsWebConfigNeedsListener(t *testing.T) {
	code, _, stderr := runCLI("run", "--metrics-web-config", "/etc/netreconcile/web.yml")
	if code != ExitUsage || !strings.Contains(stderr, "--metrics-web-config needs --metrics-listen") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}
