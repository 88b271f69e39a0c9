package ipam

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestOwnerAlive(t *testing.T) {
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	file := t.TempDir() + "/netns"
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		owner string
		want  bool
	}{
		{"pid:" + strconv.Itoa(os.Getpid()), true},
		{"pid:1", true},
		{"pid:" + strconv.Itoa(dead.Process.Pid), false},
		{"pid:x", true},
		{"netns:" + file, true},
		{"netns:" + file + "-gone", false},
		{ConfigOwner("link", "wg0"), true},
		{"0123456789abcdef", true},
	} {
		if got := OwnerAlive(tt.owner); got != tt.want {
			t.Errorf("OwnerAlive(%q) = %v, want %v", tt.owner, got, tt.want)
		}
	}
}
