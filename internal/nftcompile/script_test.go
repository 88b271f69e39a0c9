package nftcompile

import (
	"strings"
	"testing"
	"time"

	"github.com/netreconcile/netreconcile/internal/model"
)

// A set's timeout goes to nft in nft's own units: nft refuses some large
// counts of milliseconds ("timeout 2073599000ms": value too large), so a
// set of netreconcile's own type with a timeout of weeks was refused by
// validate though nft takes the same timeout in days (issue 31, nftables'
// tests/py inet/sets.t through the differential).
func TestIssue31SetTimeoutInNftUnits(t *testing.T) {
	s := &model.NftSet{Name: "s", Type: "ipv6_addr", Timeout: true,
		DefaultTimeout: 20*24*time.Hour + 5*time.Hour + 59*time.Second + 250*time.Millisecond}
	if d := setDecl(s); !strings.Contains(d, " timeout 20d5h59s250ms;") {
		t.Errorf("declaration %q", d)
	}
}
