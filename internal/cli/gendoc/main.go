// Command gendoc writes netreconcile's manual pages and shell completion
// scripts from the help text the binary prints (cli.HelpPages), so that
// the three never drift apart. make deb runs it:
//
//	go run ./internal/cli/gendoc -man DIR -completion DIR -version V -date YYYY-MM-DD
//
// -man writes netreconcile.8 and one page per command (netreconcile-apply.8,
// netreconcile-ipam-allocate.8...), in roff; -completion writes netreconcile
// (bash), _netreconcile (zsh) and netreconcile.fish.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/netreconcile/netreconcile/internal/buildinfo"
	"github.com/netreconcile/netreconcile/internal/cli"
)

func main() {
	manDir := flag.String("man", "", "write the manual pages to `DIR`")
	compDir := flag.String("completion", "", "write the completion scripts to `DIR`")
	version := flag.String("version", buildinfo.Version(), "the version the pages name")
	date := flag.String("date", time.Now().UTC().Format(time.DateOnly), "the pages' date (YYYY-MM-DD)")
	flag.Parse()
	if flag.NArg() > 0 || (*manDir == "" && *compDir == "") {
		fmt.Fprintln(os.Stderr, "usage: gendoc [-man DIR] [-completion DIR] [-version V] [-date YYYY-MM-DD]")
		os.Exit(2)
	}
	if err := run(*manDir, *compDir, *version, *date); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

func run(manDir, compDir, version, date string) error {
	if _, err := time.Parse(time.DateOnly, date); err != nil {
		return fmt.Errorf("date %q is not YYYY-MM-DD: %w", date, err)
	}
	if manDir != "" {
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			return err
		}
		pages := cli.HelpPages()
		for _, p := range pages {
			path := filepath.Join(manDir, pageName(p.Command)+".8")
			if err := os.WriteFile(path, []byte(manPage(p, pages, version, date)), 0o644); err != nil {
				return err
			}
		}
	}
	if compDir != "" {
		if err := os.MkdirAll(compDir, 0o755); err != nil {
			return err
		}
		for shell, name := range map[string]string{"bash": "netreconcile", "zsh": "_netreconcile", "fish": "netreconcile.fish"} {
			s, err := cli.Completion(shell)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(compDir, name), []byte(s), 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
