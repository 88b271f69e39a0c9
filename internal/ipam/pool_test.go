package ipam

import (
	"github.com/netreconcile/netreconcile/internal/model"

	"testing"
)

func TestOpenRejectsConflictingPools(t *testing.T) {
	a := model.DefaultPoolSpec("a", v4("10.0.0.0/16"))
	for _, tt := range []struct {
		name  string
		other Pool
		want  string
	}{
		{"same name", model.DefaultPoolSpec("a", v4("10.1.0.0/16")), "pool a is defined twice"},
		{"overlap", model.DefaultPoolSpec("b", v4("10.0.128.0/24")), "pool b: subnet 10.0.128.0/24 overlaps 10.0.0.0/16 of pool a"},
	} {
		if _, err := Open(t.TempDir(), []Pool{a, tt.other}, nil); !contains(err, tt.want) {
			t.Errorf("%s: Open = %v, want %q", tt.name, err, tt.want)
		}
	}
}
