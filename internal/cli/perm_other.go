//go:build !linux

package cli

func missingCaps(bool) []string { return nil }
