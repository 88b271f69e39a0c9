package nftcompile

import (
	"encoding/json"
	"unicode"

	"github.com/netreconcile/netreconcile/internal/statedir"
)

// binaryID identifies the program file at a path, as exec would run it
// (symlinks followed): its device and inode, size, and modification and
// change times. An upgrade writes a new file (another inode) or rewrites
// this one (new times); the change time no one but root can set back.
type binaryID struct {
	Path         string
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64
}

// versionFile holds nft's version in a state directory (VersionCached).
const versionFile = "nft-version.json"

// maxVersionFile bounds what is read of it.
const maxVersionFile = 4096

type versionRecord struct {
	Program binaryID
	Version string
}

// maxVersion bounds the version text (nft's is some 40 characters).
const maxVersion = 200

// loadVersion reads the version recorded for the program id, if the file is
// trusted (statedir.ReadTrusted) and decodes (decodeVersion).
func loadVersion(dir *statedir.Dir, id binaryID) (string, bool) {
	b, err := dir.ReadTrusted(versionFile, maxVersionFile)
	if err != nil {
		return "", false
	}
	return decodeVersion(b, id)
}

// decodeVersion takes a record that names the program id exactly and holds
// a plausible version: one line of printable text, as nft --version prints,
// and no longer than maxVersion. Anything else is no record.
func decodeVersion(b []byte, id binaryID) (string, bool) {
	var r versionRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Program != id || r.Version == "" || len(r.Version) > maxVersion {
		return "", false
	}
	for _, c := range r.Version {
		if !unicode.IsPrint(c) {
			return "", false
		}
	}
	return r.Version, true
}

// saveVersion records a version that decodes back (what nft said may not:
// then nothing is kept, and the next command asks nft again).
func saveVersion(dir *statedir.Dir, id binaryID, version string) error {
	b, err := encodeVersion(id, version)
	if err != nil {
		return err
	}
	if _, ok := decodeVersion(b, id); !ok {
		return nil
	}
	return dir.WriteFile(versionFile, b, 0o600)
}

func encodeVersion(id binaryID, version string) ([]byte, error) {
	return json.Marshal(versionRecord{Program: id, Version: version})
}
