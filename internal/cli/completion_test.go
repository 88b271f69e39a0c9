package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// completionCases: a command line up to the cursor and what every shell
// must offer there, exactly. The commands are the list of the program's own
// help (see mainHelpCommands), not the list the scripts are made from.
func completionCases(t *testing.T) map[string][]string {
	return map[string][]string{
		"netreconcile ":                      mainHelpCommands(t),
		"netreconcile ap":                    {"apply"},
		"netreconcile apply --conf":          {"--conf-dir", "--config", "--confirm-within"},
		"netreconcile apply -o ":             {"json", "text"},
		"netreconcile diff --output ":        {"json", "text"},
		"netreconcile apply --probe x --ca":  {"--candidate"},
		"netreconcile ipam --netns lab ":     {"allocate", "gc", "list", "release"},
		"netreconcile ipam --netns lab al":   {"allocate"},
		"netreconcile ipam allocate --ow":    {"--owner"},
		"netreconcile ipam gc --fr":          {"--free-after"},
		"netreconcile wireguard ":            {"genkey", "pubkey"},
		"netreconcile completion ":           {"bash", "fish", "zsh"},
		"netreconcile help ro":               {"rollback"},
		"netreconcile run --log-f":           {"--log-format"},
		"netreconcile apply -c x.yaml --qu":  {"--quiet"},
		"netreconcile validate --state-dir ": nil, // a directory: checked below
	}
}

// mainHelpCommands reads the command names from `netreconcile help`'s
// "Commands:" list.
func mainHelpCommands(t *testing.T) []string {
	t.Helper()
	var out bytes.Buffer
	cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &out, Getenv: func(string) string { return "" }}, []string{"help"})
	_, list, ok := strings.Cut(out.String(), "\nCommands:\n")
	if !ok {
		t.Fatalf("netreconcile help has no Commands: list:\n%s", out.String())
	}
	var names []string
	for _, l := range strings.Split(list, "\n") {
		if l == "" {
			break
		}
		if m := regexp.MustCompile(`^  ([a-z]+)`).FindStringSubmatch(l); m != nil {
			names = append(names, m[1])
		}
	}
	slices.Sort(names)
	return names
}

// scripts writes the three scripts, as the package installs them.
func scripts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for shell, name := range map[string]string{"bash": "netreconcile", "zsh": "_netreconcile", "fish": "netreconcile.fish"} {
		var out, errb bytes.Buffer
		if code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb}, []string{"completion", shell}); code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, errb.String())
		}
		if err := os.WriteFile(filepath.Join(dir, name), out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func shell(t *testing.T, name string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	if errb.Len() > 0 {
		t.Errorf("%s wrote to standard error: %s", name, errb.String())
	}
	return out.String()
}

// bashComplete runs the bash script's function as bash does at a tab.
const bashComplete = `source "$1"
complete -p netreconcile
read -r -a COMP_WORDS <<<"$2"
[[ $2 == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$2 COMP_POINT=${#2}
_netreconcile
printf '%s\n' "${COMPREPLY[@]}"
`

// zshComplete types a line and a tab into an interactive zsh on a pseudo
// terminal and prints what the completion system adds (compadd, which
// still adds them: _files falls back to every file when no directory was
// added), one per line; the markers are split so that zsh's echo of the definitions never
// matches them.
const zshComplete = `zmodload zsh/zpty || exit 2
zpty z zsh -f -i
zpty -w z "fpath=($1 \$fpath); autoload -Uz compinit; compinit -u -D"
zpty -w z 'comppostfuncs=(__done)'
zpty -w z '__done() { print -r -- "<<""M>>registered=$_comps[netreconcile]<<""E>>"; print -r -- "<<""END>>"; exit }'
zpty -w z 'compadd() {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return $?; fi
  typeset -a __hits
  builtin compadd -A __hits "$@"
  local h; for h in $__hits; do print -r -- "<<""M>>$h<<""E>>"; done
  builtin compadd "$@"
}'
zpty -w z "bindkey '^I' complete-word"
zpty -n -w z "$2"$'\t'
zpty -r z out '*<<END>>*'
print -r -- "$out" | tr -d '\r' | grep -o '<<M>>.*<<E>>' | sed 's/^<<M>>//; s/<<E>>$//'
zpty -d z
`

// TestCompletion: each shell's script parses (bash -n, zsh -n, fish -n),
// registers itself for netreconcile (complete -p; zsh's #compdef read by
// compinit), and offers exactly what completionCases list when the
// completion system runs on those lines.
func TestCompletion(t *testing.T) {
	dir := scripts(t)
	bash, zsh, fish := filepath.Join(dir, "netreconcile"), filepath.Join(dir, "_netreconcile"), filepath.Join(dir, "netreconcile.fish")
	state := t.TempDir()
	if err := os.Mkdir(filepath.Join(state, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "somefile"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := completionCases(t)
	cases["netreconcile validate --state-dir "+state+"/s"] = []string{"sub"}
	delete(cases, "netreconcile validate --state-dir ")
	lines := slices.Sorted(func(yield func(string) bool) {
		for l := range cases {
			if !yield(l) {
				return
			}
		}
	})
	// Paths as the shells write them differ (bash: DIR/sub, fish: DIR/sub/,
	// zsh: sub/): compare the last element.
	norm := func(out string) []string {
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			l, _, _ = strings.Cut(l, "\t") // fish: word<TAB>description
			if l = strings.TrimRight(l, "/"); l != "" {
				got = append(got, filepath.Base(l))
			}
		}
		slices.Sort(got)
		return slices.Compact(got)
	}
	t.Run("bash", func(t *testing.T) {
		nettest.RequireTool(t, "bash")
		shell(t, "bash", "-n", bash)
		for _, l := range lines {
			out := shell(t, "bash", "-c", bashComplete, "bash", bash, l)
			reg, rest, _ := strings.Cut(out, "\n")
			if reg != "complete -F _netreconcile netreconcile" {
				t.Fatalf("complete -p: %q", reg)
			}
			if got := norm(rest); !slices.Equal(got, cases[l]) {
				t.Errorf("bash %q: %q, want %q", l, got, cases[l])
			}
		}
	})
	t.Run("zsh", func(t *testing.T) {
		if testing.Short() {
			// A pseudo-terminal and a zsh per line: seconds, not for
			// make check.
			t.Skip("types each line into an interactive zsh; make test runs it")
		}
		nettest.RequireTool(t, "zsh")
		shell(t, "zsh", "-n", zsh)
		script := filepath.Join(t.TempDir(), "complete.zsh")
		if err := os.WriteFile(script, []byte(zshComplete), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			out := shell(t, "timeout", "30", "zsh", "-f", script, dir, l)
			if !strings.Contains(out, "registered=_netreconcile\n") {
				t.Fatalf("compinit did not register _netreconcile for netreconcile: %q", out)
			}
			rest := strings.Replace(out, "registered=_netreconcile\n", "", 1)
			if got := norm(rest); !slices.Equal(got, cases[l]) {
				t.Errorf("zsh %q: %q, want %q", l, got, cases[l])
			}
		}
	})
	t.Run("fish", func(t *testing.T) {
		nettest.RequireTool(t, "fish")
		shell(t, "fish", "--no-config", "-n", fish)
		for _, l := range lines {
			out := shell(t, "fish", "--no-config", "-c", fmt.Sprintf("source %s; complete -C %s", fish, fishQuote(l)))
			if got := norm(out); !slices.Equal(got, cases[l]) {
				t.Errorf("fish %q: %q, want %q", l, got, cases[l])
			}
		}
	})
}

func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

// TestCompletionOptionsExist: every option a script offers is one the
// command accepts (package flag would say "flag provided but not defined").
func TestCompletionOptionsExist(t *testing.T) {
	n := 0
	for _, p := range cli.HelpPages() {
		if p.Command == "" {
			continue
		}
		for _, o := range cli.HelpOptions(p.Text) {
			for _, name := range []string{o.Short, o.Long} {
				if name == "" || name == "-h" || name == "--help" {
					continue
				}
				arg := name
				if o.Arg != "" {
					arg += "=1s"
				}
				args := append(strings.Fields(p.Command), arg, "--help")
				var out, errb bytes.Buffer
				// NETRECONCILE_RUN_AS: never run again as the service's
				// user, whatever this machine's state directory.
				env := &cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
					if k == "NETRECONCILE_RUN_AS" {
						return "1"
					}
					return ""
				}}
				cli.Run(context.Background(), env, args)
				if strings.Contains(errb.String(), "not defined") {
					t.Errorf("netreconcile %s: %s", strings.Join(args, " "), errb.String())
				}
				n++
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d options checked", n)
	}
}

// TestCompletionUsage: an unknown shell or none is a usage error.
func TestCompletionUsage(t *testing.T) {
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		var out, errb bytes.Buffer
		if code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb}, args); code != cli.ExitUsage || out.Len() > 0 {
			t.Errorf("%v: exit %d, stdout %q", args, code, out.String())
		}
	}
}
