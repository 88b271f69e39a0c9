package nftcompile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/vishvananda/netlink"

	"github.com/netreconcile/netreconcile/internal/nftwire"
)

// helperName is the argv[0] the compile child is started with. The child is
// this very binary (/proc/self/exe), started in a network namespace of its
// own: it runs nft there and dumps what nft made. Started by argv[0] rather
// than a subcommand so that any binary linking this package can compile:
// the command, and the test binaries of the packages that plan.
const helperName = "netreconcile-nft-compile"

// relayName is the argv[0] of a plain child that starts the compile child
// for a process that cannot itself (see run).
const relayName = "netreconcile-nft-relay"

func init() {
	if len(os.Args) > 0 && os.Args[0] == helperName {
		os.Exit(helperMain(os.Stdin, os.Stdout))
	}
	if len(os.Args) > 0 && os.Args[0] == relayName {
		os.Exit(relayMain(os.Stdin, os.Stdout))
	}
}

// relayMain reads a request as the compile child does, starts the child as
// run does and writes its answer: run's failure as the answer's Error.
func relayMain(stdin io.Reader, stdout io.Writer) int {
	var out *helperOut
	b, err := io.ReadAll(io.LimitReader(stdin, maxHelperInput))
	var in helperIn
	if err == nil {
		err = json.Unmarshal(b, &in)
	}
	if err == nil {
		out, err = run(context.Background(), &in)
	}
	if err != nil {
		out = &helperOut{Error: err.Error()}
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "%s: write the answer: %v\n", relayName, err)
		return 1
	}
	return 0
}

// maxHelperInput bounds the script the child reads.
const maxHelperInput = 256 << 20

func helperMain(stdin io.Reader, stdout io.Writer) int {
	out := helperRun(stdin)
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "%s: write the answer: %v\n", helperName, err)
		return 1
	}
	return 0
}

func helperRun(stdin io.Reader) *helperOut {
	fail := func(format string, a ...any) *helperOut { return &helperOut{Error: fmt.Sprintf(format, a...)} }
	b, err := io.ReadAll(io.LimitReader(stdin, maxHelperInput))
	if err != nil {
		return fail("read the request: %v", err)
	}
	var in helperIn
	if err := json.Unmarshal(b, &in); err != nil {
		return fail("read the request: %v", err)
	}
	conn, err := nftwire.Dial(-1)
	if err != nil {
		return fail("%v", err)
	}
	defer conn.Close()
	// Only ever in a namespace of our own: nft -f here writes tables.
	if err := checkFresh(conn); err != nil {
		return fail("%v", err)
	}
	for _, l := range in.Links {
		if err := addLink(netlink.LinkAdd, l); err != nil {
			return fail("%v", err)
		}
	}
	out := &helperOut{}
	for _, script := range in.Checks {
		said, err := nft(in.Nft, script, "-c")
		if err != nil {
			return fail("%v", err)
		}
		out.Checked = append(out.Checked, said)
	}
	for i, script := range in.Scripts {
		said, err := nft(in.Nft, script)
		if err != nil {
			return fail("%v", err)
		}
		if said != "" {
			return &helperOut{Refused: true, Failed: i, Stderr: said}
		}
	}
	if out.Dumps, err = dumpTables(conn, in.Tables); err != nil {
		return fail("%v", err)
	}
	return out
}

// nft runs nft -f on a script, with more flags, and returns what it said
// when it refused the script ("" when it took it); the error is nft's
// failure to run at all.
func nft(prog, script string, flags ...string) (string, error) {
	cmd := nftCommand(context.Background(), prog, flags...)
	cmd.Stdin = bytes.NewReader([]byte(script))
	var errb bytes.Buffer
	cmd.Stderr = &errb
	return nftSaid(prog, cmd.Run(), &errb)
}

// nftCommand is nft -f - with more flags, in the C locale (its messages are
// read), from /, dying with its parent: a compile cancelled (its timeout,
// the command killed) leaves no nft behind, busy or not.
func nftCommand(ctx context.Context, prog string, flags ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, prog, append(flags, "-f", "-")...)
	cmd.Env = []string{"LC_ALL=C"}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stdout = io.Discard
	return cmd
}

// nftSaid reads how nft ended: what it said when it refused its script (""
// when it took it); the error is nft's failure to run at all.
func nftSaid(prog string, err error, errb *bytes.Buffer) (string, error) {
	if err == nil {
		return "", nil
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return "", fmt.Errorf("run %s: %w", prog, err)
	}
	if errb.Len() == 0 {
		return fmt.Sprintf("nft exited with status %d and said nothing", ee.ExitCode()), nil
	}
	return errb.String(), nil
}

// checkFresh refuses a namespace that holds nftables tables: nft -f writes
// tables, and only ever in a namespace made for compiling.
func checkFresh(conn *nftwire.Conn) error {
	tables, err := conn.Dump(nftwire.MsgGetTable, 0, nil)
	switch {
	case errors.Is(err, os.ErrPermission):
		return fmt.Errorf("nftables refuses this namespace's requests (%v): the user namespace holds no capability over it (an AppArmor or SELinux policy on user namespaces?)", err)
	case err != nil:
		return fmt.Errorf("list tables: %w", err)
	case len(tables) > 0:
		return errors.New("the namespace holds nftables tables: not one made for compiling; refusing to run nft in it")
	}
	return nil
}

// dumpTables dumps what nft made of the script's tables.
func dumpTables(conn *nftwire.Conn, tables []helperTable) ([]*nftwire.TableDump, error) {
	var out []*nftwire.TableDump
	for _, t := range tables {
		fam, ok := nftwire.Family(t.Family)
		if !ok {
			return nil, fmt.Errorf("unknown family %q", t.Family)
		}
		d, err := conn.ReadTable(fam, t.Name, nil)
		if err != nil {
			return nil, err
		}
		if d == nil {
			return nil, fmt.Errorf("table %s %s: nft made no such table", t.Family, t.Name)
		}
		out = append(out, d)
	}
	return out, nil
}

// addLink makes a link of a name and index with add: a dummy where the
// kernel has the kind, a bridge otherwise (both are one device, with
// nothing to set).
func addLink(add func(netlink.Link) error, l helperLink) error {
	attrs := netlink.LinkAttrs{Name: l.Name, Index: l.Index}
	err := add(&netlink.Dummy{LinkAttrs: attrs})
	if err == nil {
		return nil
	}
	if berr := add(&netlink.Bridge{LinkAttrs: attrs}); berr != nil {
		return fmt.Errorf("make link %s (index %d) for nft to find: dummy: %v; bridge: %w", l.Name, l.Index, err, berr)
	}
	return nil
}
