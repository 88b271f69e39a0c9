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
	// NFTHandles holds the kernel's handle of each table in NFTables (0 or
	// missing: not yet known, as in a ledger written before handles were
	// recorded). The handle is a per-namespace counter: a table deleted
	// and made again by someone else under the same name has another one,
	// and is not ours.
	NFTHandles map[model.NftTableKey]uint64
}

type fileFormat struct {
	Version  int       `json:"version"`
	FouPorts []fouJSON `json:"fou_ports"`
	NFTables []nftJSON `json:"nftables,omitempty"`
}

type nftJSON struct {
	Family string `json:"family"`
	Name   string `json:"name"`
	Handle uint64 `json:"handle,omitempty"`
}

type fouJSON struct {
	Port uint16 `json:"port"`
	IPv6 bool   `json:"ipv6"`
}

// Open loads the ledger at path; a missing file is an empty ledger. An
// unreadable or corrupt one is an error naming the file: pruning with a lost
// ledger would leave ports open, so nothing is guessed.
func Open(path string) (*Ledger, error) {
	l := &Ledger{path: path, Fou: map[model.FouKey]bool{}, NFTables: map[model.NftTableKey]bool{}, NFTHandles: map[model.NftTableKey]uint64{}}
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
		k := model.NftTableKey{Family: t.Family, Name: t.Name}
		l.NFTables[k] = true
		if t.Handle != 0 {
			l.NFTHandles[k] = t.Handle
		}
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
		delete(l.NFTHandles, k)
	}
}

// SetNftTableHandle records the kernel's handle of a table the ledger lists.
func (l *Ledger) SetNftTableHandle(k model.NftTableKey, handle uint64) {
	if l.NFTables[k] {
		l.NFTHandles[k] = handle
	}
}

// NftTableIsOurs reports whether the kernel's table k with handle is the
// one the ledger lists. A table listed without a handle is taken as ours
// (its handle is recorded on first sight); one with another handle was
// deleted and made again by someone else.
func (l *Ledger) NftTableIsOurs(k model.NftTableKey, handle uint64) bool {
	if !l.NFTables[k] {
		return false
	}
	h, ok := l.NFTHandles[k]
	return !ok || h == 0 || h == handle
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
		f.NFTables = append(f.NFTables, nftJSON{k.Family, k.Name, l.NFTHandles[k]})
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
