//go:build !linux

package cli

import (
	"context"
	"os"

	"github.com/netreconcile/netreconcile/internal/safeapply"
)

// runAsServiceUser: the packaged service is Linux's (runas_linux.go).
func runAsServiceUser(context.Context, *Env, []string) (int, bool) { return 0, false }

func handedByRoot() (safeapply.MainWriter, *os.File) { return nil, nil }

func handedPlanIn() *os.File  { return nil }
func handedPlanOut() *os.File { return nil }
