//go:build !linux

package nftcompile

import (
	"context"
	"errors"
)

// ErrNoNamespace says the child could not be given a namespace of its own.
var ErrNoNamespace = errors.New("compiling nftables rules needs Linux network namespaces")

func run(ctx context.Context, in *helperIn) (*helperOut, error) { return nil, ErrNoNamespace }

// Prestart does nothing where nft runs in no namespace of its own.
func (n *Nft) Prestart() {}

// DropSpare does nothing: Prestart started nothing.
func (n *Nft) DropSpare() {}

// Settle does nothing: Prestart started nothing.
func (n *Nft) Settle() {}
