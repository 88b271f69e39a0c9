package cli

import "testing"

// TestFlagValue: the state directory, the main file and the candidate are
// found in a command line as package flag reads them.
func TestFlagValue(t *testing.T) {
	args := []string{"--state-dir", "/a", "-c=/etc/x.yaml", "--candidate", "/tmp/n.yaml", "-state-dir=/b", "--", "--state-dir", "/c"}
	if got := flagValue(args, "state-dir", DefaultStateDir); got != "/b" {
		t.Errorf("state-dir %q, want /b", got)
	}
	if got := flagValue(args, "c", DefaultConfig); got != "/etc/x.yaml" {
		t.Errorf("c %q", got)
	}
	if got := flagValue(args, "config", DefaultConfig); got != DefaultConfig {
		t.Errorf("config %q", got)
	}
	if got := flagValue(args, "netns", ""); got != "" {
		t.Errorf("netns %q", got)
	}
	if !hasFlag(args, "candidate") || hasFlag(args, "netns") {
		t.Error("hasFlag")
	}
}
