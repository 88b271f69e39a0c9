package actual

import (
	"github.com/netreconcile/netreconcile/internal/kernel"
	"github.com/netreconcile/netreconcile/internal/model"
)

// ReadNFT reads the named nftables tables whole (those the file declares and
// those the ledger says are ours); other tables are not read. Tables that do
// not exist are left out. Owned marks the tables in owned.
func ReadNFT(k kernel.Reader, keys []model.NftTableKey, owned map[model.NftTableKey]bool) ([]model.NftTable, error) {
	var out []model.NftTable
	seen := map[model.NftTableKey]bool{}
	for _, key := range keys {
		if seen[key] {
			continue
		}
		seen[key] = true
		t, err := k.NFTTable(key)
		if err != nil {
			return nil, err
		}
		if t == nil {
			continue
		}
		t.Owned = owned[key]
		out = append(out, *t)
	}
	model.SortNftTables(out)
	return out, nil
}
