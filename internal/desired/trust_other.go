//go:build !unix

package desired

import "os"

// CheckTrusted checks nothing where file ownership is not POSIX.
func CheckTrusted(mainFile, dropIn string) error { return nil }

func checkTrustedFile(path, what string) error { return nil }

// CheckTrustedSide checks nothing where file ownership is not POSIX.
func CheckTrustedSide(path string) error { return nil }

// CheckTrustedFile checks nothing where file ownership is not POSIX.
func CheckTrustedFile(path, what string) error { return nil }

// openNoWait opens a file for reading.
func openNoWait(path string) (*os.File, error) { return os.Open(path) }
