//go:build !linux

package nftcompile

import (
	"context"
	"errors"

	"github.com/netreconcile/netreconcile/internal/nftwire"
)

type helperIn struct {
	Nft     string
	Scripts []string
	Tables  []helperTable
	Links   []helperLink
}

type helperTable struct{ Family, Name string }

type helperLink struct {
	Name  string
	Index int
}

type helperOut struct {
	Error   string
	Refused bool
	Failed  int
	Stderr  string
	Dumps   []*nftwire.TableDump
}

// ErrNoNamespace says the child could not be given a namespace of its own.
var ErrNoNamespace = errors.New("compiling nftables rules needs Linux network namespaces")

func run(ctx context.Context, in *helperIn) (*helperOut, error) { return nil, ErrNoNamespace }
