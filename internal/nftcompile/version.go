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

// loadVersion reads the version recorded for the program id, if the file is
// trusted, names id exactly and holds a plausible version (one line of
// printable text, as nft --version prints).
func loadVersion(dir *statedir.Dir, id binaryID) (string, bool) {
	b, err := dir.ReadTrusted(versionFile, maxVersionFile)
	if err != nil {
		return "", false
	}
	var r versionRecord
	if err := json.Unmarshal(b, &r); err != nil || r.Program != id || r.Version == "" {
		return "", false
	}
	for _, c := range r.Version {
		if !unicode.IsPrint(c) {
			return "", false
		}
	}
	return r.Version, true
}

func saveVersion(dir *statedir.Dir, id binaryID, version string) error {
	b, err := json.Marshal(versionRecord{Program: id, Version: version})
	if err != nil {
		return err
	}
	return dir.WriteFile(versionFile, b, 0o600)
}
