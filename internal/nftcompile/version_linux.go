package nftcompile

import (
	"os"
	"syscall"
)

func identify(path string) (binaryID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return binaryID{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return binaryID{}, os.ErrInvalid
	}
	return binaryID{Path: path, Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size,
		Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}, nil
}
