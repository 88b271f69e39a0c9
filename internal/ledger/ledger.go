// Package ledger records ownership of kernel objects that cannot carry an
// owner mark themselves (FoU ports), so that a restarted netreconcile prunes
// what it opened and nothing else.
//
// The ledger is small and rewritten whole: temporary file, fsync, rename,
// fsync of the directory, so a crash leaves either the old or the new file.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/netreconcile/netreconcile/internal/model"
)

const formatVersion = 1

// Ledger is the ownership record of one network namespace.
type Ledger struct {
	path string
	Fou  map[model.FouKey]bool
	// NFTables lists the nftables tables netreconcile created or adopted.
	// Tables cannot carry an owner mark (google/nftables v0.3.0 has no
	// table user data, and NFTA_TABLE_USERDATA needs kernel 5.13), and a
	// name prefix would constrain users' names, so ownership is recorded
	// here: a table that leaves the file is deleted only if listed.
	NFTables map[model.NftTableKey]bool
}

type fileFormat struct {
	Version  int       `json:"version"`
	FouPorts []fouJSON `json:"fou_ports"`
	NFTables []nftJSON `json:"nftables,omitempty"`
}

type nftJSON struct {
	Family string `json:"family"`
	Name   string `json:"name"`
}

type fouJSON struct {
	Port uint16 `json:"port"`
	IPv6 bool   `json:"ipv6"`
}

// Open loads the ledger at path; a missing file is an empty ledger. An
// unreadable or corrupt one is an error naming the file: pruning with a lost
// ledger would leave ports open, so nothing is guessed.
func Open(path string) (*Ledger, error) {
	l := &Ledger{path: path, Fou: map[model.FouKey]bool{}, NFTables: map[model.NftTableKey]bool{}}
	if path == "" {
		return l, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read ownership ledger: %w", err)
	}
	var f fileFormat
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("ownership ledger %s is corrupt: %w", path, err)
	}
	if f.Version != formatVersion {
		return nil, fmt.Errorf("ownership ledger %s has version %d; this netreconcile reads %d", path, f.Version, formatVersion)
	}
	for _, p := range f.FouPorts {
		l.Fou[model.FouKey{Port: p.Port, IPv6: p.IPv6}] = true
	}
	for _, t := range f.NFTables {
		l.NFTables[model.NftTableKey{Family: t.Family, Name: t.Name}] = true
	}
	return l, nil
}

// SetFou records a FoU port as ours or not.
func (l *Ledger) SetFou(k model.FouKey, owned bool) {
	if owned {
		l.Fou[k] = true
	} else {
		delete(l.Fou, k)
	}
}

// SetNftTable records an nftables table as ours or not.
func (l *Ledger) SetNftTable(k model.NftTableKey, owned bool) {
	if owned {
		l.NFTables[k] = true
	} else {
		delete(l.NFTables, k)
	}
}

// Save writes the ledger durably. A ledger opened with an empty path is kept
// in memory only.
func (l *Ledger) Save() error {
	if l.path == "" {
		return nil
	}
	f := fileFormat{Version: formatVersion, FouPorts: []fouJSON{}}
	for k := range l.Fou {
		f.FouPorts = append(f.FouPorts, fouJSON{k.Port, k.IPv6})
	}
	sort.Slice(f.FouPorts, func(i, j int) bool {
		a, b := f.FouPorts[i], f.FouPorts[j]
		if a.IPv6 != b.IPv6 {
			return !a.IPv6
		}
		return a.Port < b.Port
	})
	for k := range l.NFTables {
		f.NFTables = append(f.NFTables, nftJSON{k.Family, k.Name})
	}
	sort.Slice(f.NFTables, func(i, j int) bool {
		a, b := f.NFTables[i], f.NFTables[j]
		return model.NftTableKey{Family: a.Family, Name: a.Name}.Less(model.NftTableKey{Family: b.Family, Name: b.Name})
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(l.path, append(data, '\n'), 0o644)
}

// WriteFileAtomic replaces path with data durably: temporary file in the
// same directory, fsync, rename, fsync of the directory.
func WriteFileAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: sync directory: %w", path, err)
	}
	return nil
}
