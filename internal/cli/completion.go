package cli

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// The manual pages (internal/cli/gendoc) and the shell completion come from
// the help text the binary prints, never from a copy of it: HelpPages lists
// that text page by page, and the completion scripts take each command's
// options from its "  -c, --config FILE  description" lines.

// HelpPage is the help of one command as `netreconcile help` prints it.
type HelpPage struct {
	// Command is the command line after "netreconcile": "" for the
	// program itself, "apply", "ipam allocate".
	Command string
	// Summary is one line saying what the command does.
	Summary string
	// Text is the help, verbatim.
	Text string
}

// HelpPages returns the program's help, then each command's, then each
// subcommand's that has a help of its own (ipam's).
func HelpPages() []HelpPage {
	summary, _, _ := strings.Cut(mainHelp, "\n")
	_, summary, _ = strings.Cut(summary, " - ")
	pages := []HelpPage{{Command: "", Summary: summary, Text: mainHelp}}
	for _, c := range commands() {
		pages = append(pages, HelpPage{Command: c.name, Summary: c.summary, Text: c.usage})
		if c.name == "ipam" {
			for _, s := range ipamCommands() {
				pages = append(pages, HelpPage{Command: "ipam " + s.name, Summary: s.summary, Text: s.usage})
			}
		}
	}
	return pages
}

// HelpOption is one option line of a help text.
type HelpOption struct {
	Short, Long string // "-c", "--config"; Short may be empty
	// Arg is the value's name ("FILE"), empty for a boolean option.
	Arg string
	// Description is the first clause of the option's description.
	Description string
}

// optionLine matches the first line of an option in a help text: indented
// by 2 to 8 columns, an optional short form, the long form, and the value's
// name in capitals after exactly one space (the description starts after
// one or more: "--lock-timeout D how long...", "--due   wait for...").
var optionLine = regexp.MustCompile(`^ {2,8}(?:(-[A-Za-z0-9]), )?(--[a-z][a-z0-9-]*)(?: ([A-Z][A-Z0-9_-]*))?(?: +(.*))?$`)

// ParseOptionLine reads the first line of an option in a help text; ok is
// false for any other line. Desc is the description's start on that line.
func ParseOptionLine(line string) (o HelpOption, descStart int, ok bool) {
	m := optionLine.FindStringSubmatchIndex(line)
	if m == nil {
		return HelpOption{}, 0, false
	}
	part := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return line[m[2*i]:m[2*i+1]]
	}
	descStart = len(line)
	if m[8] >= 0 {
		descStart = m[8]
	}
	return HelpOption{Short: part(1), Long: part(2), Arg: part(3), Description: part(4)}, descStart, true
}

// HelpOptions returns the options a help text lists, in order, each once.
func HelpOptions(text string) []HelpOption {
	var out []HelpOption
	seen := map[string]bool{}
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		m := optionLine.FindStringSubmatch(line)
		if m == nil || seen[m[2]] {
			continue
		}
		seen[m[2]] = true
		// The description goes on over the lines indented deeper than
		// the option, up to the next option or a blank line.
		indent := len(line) - len(strings.TrimLeft(line, " "))
		desc := []string{m[4]}
		for _, l := range lines[i+1:] {
			t := strings.TrimLeft(l, " ")
			if t == "" || len(l)-len(t) <= indent || optionLine.MatchString(l) {
				break
			}
			desc = append(desc, t)
		}
		out = append(out, HelpOption{Short: m[1], Long: m[2], Arg: m[3], Description: shortDescription(strings.Join(desc, " "))})
	}
	return out
}

// shortDescription is the first clause of an option's description, the
// part a completion menu shows: up to the first "; " or ": " outside
// parentheses, then, if still long, up to the first parenthesis, and at most
// about 70 characters.
func shortDescription(d string) string {
	d = strings.Join(strings.Fields(d), " ")
	d = cutOutside(d, "; ", ": ")
	if len(d) > 70 {
		d = cutOutside(d, " (")
	}
	if len(d) > 70 {
		i := strings.LastIndex(d[:70], " ")
		if i < 10 {
			i = 70
		}
		d = d[:i] + "…"
	}
	return d
}

// cutOutside cuts d at the first separator outside parentheses that leaves
// ten characters or more.
func cutOutside(d string, seps ...string) string {
	depth := 0
	for i := 0; i < len(d); i++ {
		if depth == 0 && i >= 10 {
			for _, sep := range seps {
				if strings.HasPrefix(d[i:], sep) {
					return d[:i]
				}
			}
		}
		switch d[i] {
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			depth--
		}
	}
	return d
}

// valueKind is what the shells complete as an option's value.
type valueKind string

const (
	valueNone   valueKind = "none"
	valueFile   valueKind = "file"
	valueDir    valueKind = "dir"
	valueNetns  valueKind = "netns"
	valueIface  valueKind = "iface"
	valueFormat valueKind = "format"
)

// outputFormats are the values of -o/--output that every command takes.
var outputFormats = []string{"text", "json"}

func kindOf(o HelpOption) valueKind {
	switch {
	case o.Arg == "":
		return ""
	case o.Long == "--netns":
		return valueNetns
	case o.Long == "--iface":
		return valueIface
	case o.Long == "--output":
		return valueFormat
	case o.Arg == "FILE" || o.Arg == "PATH":
		return valueFile
	case o.Arg == "DIR":
		return valueDir
	}
	return valueNone
}

// compContext is where on a command line the shell completes: the
// program ("") or a command ("apply", "ipam allocate"), with the words it
// takes next and its options.
type compContext struct {
	name    string
	words   []compWord
	options []HelpOption
}

type compWord struct{ word, summary string }

// completionContexts lists every context, the program's first.
func completionContexts() []compContext {
	pages := HelpPages()
	var cmds []compWord
	for _, p := range pages[1:] {
		if !strings.Contains(p.Command, " ") {
			cmds = append(cmds, compWord{p.Command, p.Summary})
		}
	}
	top := append(slices.Clone(cmds), compWord{"help", "show the help of one command"}, compWord{"version", "print the version"})
	ctxs := []compContext{{name: "", words: top}}
	for _, p := range pages[1:] {
		c := compContext{name: p.Command, options: HelpOptions(p.Text)}
		switch p.Command {
		case "ipam":
			for _, s := range ipamCommands() {
				c.words = append(c.words, compWord{s.name, s.summary})
			}
		case "wireguard":
			c.words = []compWord{{"genkey", "print a new private key"}, {"pubkey", "print the public key of the private key on standard input"}}
		case "completion":
			c.words = []compWord{{"bash", "the script for bash"}, {"zsh", "the script for zsh"}, {"fish", "the script for fish"}}
		}
		ctxs = append(ctxs, c)
	}
	ctxs = append(ctxs, compContext{name: "help", words: cmds}, compContext{name: "version"})
	return ctxs
}

// Completion returns the completion script of a shell: bash, zsh or fish.
func Completion(shell string) (string, error) {
	ctxs := completionContexts()
	// One value kind per option, whatever the command: the scripts
	// complete a value by the option alone.
	kinds := map[string]valueKind{}
	for _, c := range ctxs {
		for _, o := range c.options {
			k := kindOf(o)
			if prev, ok := kinds[o.Long]; ok && prev != k {
				return "", fmt.Errorf("option %s takes a %q value in one help and a %q one in another", o.Long, prev, k)
			}
			kinds[o.Long] = k
			if o.Short != "" {
				kinds[o.Short] = k
			}
		}
	}
	var b strings.Builder
	switch shell {
	case "bash":
		writeBash(&b, ctxs, kinds)
	case "zsh":
		writeZsh(&b, ctxs, kinds)
	case "fish":
		writeFish(&b, ctxs, kinds)
	default:
		return "", fmt.Errorf("no completion for shell %q: bash, zsh or fish", shell)
	}
	return b.String(), nil
}

func runCompletion(_ context.Context, env *Env, args []string) int {
	if len(args) == 1 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprint(env.Stdout, completionHelp)
		return ExitOK
	}
	if len(args) != 1 {
		fmt.Fprintf(env.Stderr, "netreconcile completion: give one shell: bash, zsh or fish (see 'netreconcile help completion')\n")
		return ExitUsage
	}
	s, err := Completion(args[0])
	if err != nil {
		fmt.Fprintf(env.Stderr, "netreconcile completion: %v\n", err)
		return ExitUsage
	}
	fmt.Fprint(env.Stdout, s)
	return ExitOK
}

const completionHeader = "# %s completion for netreconcile, made by `netreconcile completion %s`\n" +
	"# from the commands' help (netreconcile help COMMAND).\n"

// flagNames returns an option's forms: "-c --config", or "--conf-dir".
func flagNames(o HelpOption) []string {
	if o.Short != "" {
		return []string{o.Short, o.Long}
	}
	return []string{o.Long}
}

func writeBash(b *strings.Builder, ctxs []compContext, kinds map[string]valueKind) {
	fmt.Fprintf(b, completionHeader, "bash", "bash")
	b.WriteString("\n# _netreconcile_ctx CONTEXT: the words that may follow (WORDS), the\n" +
		"# options (OPTS) and those of them that take a value (VALUED).\n")
	b.WriteString("_netreconcile_ctx() {\n\tWORDS= OPTS= VALUED=\n\tcase $1 in\n")
	for _, c := range ctxs {
		var words, opts, valued []string
		for _, w := range c.words {
			words = append(words, w.word)
		}
		for _, o := range c.options {
			opts = append(opts, flagNames(o)...)
			if o.Arg != "" {
				valued = append(valued, flagNames(o)...)
			}
		}
		fmt.Fprintf(b, "\t%s)\n", shellQuote(c.name))
		fmt.Fprintf(b, "\t\tWORDS=%s\n\t\tOPTS=%s\n\t\tVALUED=%s\n\t\t;;\n",
			shellQuote(strings.Join(words, " ")), shellQuote(strings.Join(opts, " ")), shellQuote(strings.Join(valued, " ")))
	}
	b.WriteString("\t*) return 1 ;;\n\tesac\n}\n")
	b.WriteString(`
# _netreconcile_value OPTION CUR: the values of an option.
_netreconcile_value() {
	case $1 in
`)
	for _, k := range []valueKind{valueFile, valueDir, valueNetns, valueIface, valueFormat} {
		var names []string
		for _, n := range sortedKeys(kinds) {
			if kinds[n] == k {
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		fmt.Fprintf(b, "\t%s)\n", strings.Join(names, " | "))
		switch k {
		case valueFile:
			b.WriteString("\t\tcompopt -o filenames 2>/dev/null\n\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$2\")\n")
		case valueDir:
			b.WriteString("\t\tcompopt -o filenames 2>/dev/null\n\t\tmapfile -t COMPREPLY < <(compgen -d -- \"$2\")\n")
		case valueNetns:
			b.WriteString("\t\t# A name as ip netns lists it, or a path such as /proc/PID/ns/net.\n" +
				"\t\tif [[ $2 == /* ]]; then\n\t\t\tcompopt -o filenames 2>/dev/null\n\t\t\tmapfile -t COMPREPLY < <(compgen -f -- \"$2\")\n" +
				"\t\telse\n\t\t\tmapfile -t COMPREPLY < <(compgen -W \"$(ls /run/netns 2>/dev/null)\" -- \"$2\")\n\t\tfi\n")
		case valueIface:
			b.WriteString("\t\tmapfile -t COMPREPLY < <(compgen -W \"$(ls /sys/class/net 2>/dev/null)\" -- \"$2\")\n")
		case valueFormat:
			fmt.Fprintf(b, "\t\tmapfile -t COMPREPLY < <(compgen -W %s -- \"$2\")\n", shellQuote(strings.Join(outputFormats, " ")))
		}
		b.WriteString("\t\t;;\n")
	}
	b.WriteString("\tesac\n}\n")
	b.WriteString(`
_netreconcile() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local ctx= i w npos=0 WORDS OPTS VALUED
	COMPREPLY=()
	_netreconcile_ctx ""
	# Walk the words before the cursor: a command (or ipam's subcommand)
	# moves to its context; an option's value is skipped.
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == -* ]]; then
			[[ $w != *=* && " $VALUED " == *" $w "* ]] && ((i++))
			continue
		fi
		if ((npos == 0)) && [[ " $WORDS " == *" $w "* ]] && _netreconcile_ctx "${ctx:+$ctx }$w"; then
			ctx=${ctx:+$ctx }$w
			continue
		fi
		_netreconcile_ctx "$ctx"
		npos=$((npos + 1))
	done
	_netreconcile_ctx "$ctx"
	if [[ $prev == -* && " $VALUED " == *" $prev "* ]]; then
		_netreconcile_value "$prev" "$cur"
		return 0
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$OPTS" -- "$cur")
	elif ((npos == 0)); then
		mapfile -t COMPREPLY < <(compgen -W "$WORDS" -- "$cur")
	fi
	return 0
}
complete -F _netreconcile netreconcile
`)
}

func writeZsh(b *strings.Builder, ctxs []compContext, kinds map[string]valueKind) {
	b.WriteString("#compdef netreconcile\n")
	fmt.Fprintf(b, completionHeader, "zsh", "zsh")
	b.WriteString(`
_netreconcile_netns() {
	local -a names
	names=(/run/netns/*(N:t))
	_alternative 'netns:network namespace:compadd -a names' 'paths:namespace file:_files'
}
`)
	fn := func(ctx string) string {
		if ctx == "" {
			return "_netreconcile"
		}
		return "_netreconcile_" + strings.ReplaceAll(ctx, " ", "_")
	}
	for _, c := range ctxs {
		fmt.Fprintf(b, "\n%s() {\n", fn(c.name))
		var specs []string
		for _, o := range c.options {
			specs = append(specs, zshSpec(o, kinds[o.Long]))
		}
		var sub []compContext
		for _, w := range c.words {
			for _, d := range ctxs {
				if d.name == strings.TrimSpace(c.name+" "+w.word) && c.name != "help" {
					sub = append(sub, d)
				}
			}
		}
		if len(c.words) > 0 {
			// Not "words": zsh's completion keeps the command line there.
			b.WriteString("\tlocal -a cmds\n\tcmds=(\n")
			for _, w := range c.words {
				fmt.Fprintf(b, "\t\t%s\n", shellQuote(zshEscape(w.word)+":"+zshEscape(w.summary)))
			}
			b.WriteString("\t)\n")
		}
		if len(sub) == 0 {
			if len(c.words) > 0 {
				specs = append(specs, "'1: :{_describe -t commands word cmds}'")
			}
			b.WriteString("\t_arguments -s -S")
			for _, s := range specs {
				b.WriteString(" \\\n\t\t" + s)
			}
			b.WriteString("\n}\n")
			continue
		}
		b.WriteString("\tlocal curcontext=$curcontext state line ret=1\n")
		b.WriteString("\t_arguments -C -s -S")
		for _, s := range specs {
			b.WriteString(" \\\n\t\t" + s)
		}
		b.WriteString(" \\\n\t\t'1: :->word' \\\n\t\t'*:: :->rest' && return 0\n")
		b.WriteString("\tcase $state in\n\tword) _describe -t commands command cmds && ret=0 ;;\n\trest)\n")
		b.WriteString("\t\tcurcontext=${curcontext%:*:*}:netreconcile-$words[1]:\n\t\tcase $words[1] in\n")
		for _, d := range sub {
			w := strings.TrimSpace(strings.TrimPrefix(d.name, c.name))
			fmt.Fprintf(b, "\t\t%s) %s && ret=0 ;;\n", w, fn(d.name))
		}
		b.WriteString("\t\tesac\n\t\t;;\n\tesac\n\treturn ret\n}\n")
	}
	b.WriteString("\n_netreconcile \"$@\"\n")
}

// zshSpec is an _arguments spec of an option.
func zshSpec(o HelpOption, k valueKind) string {
	desc := zshEscape(o.Description)
	names := flagNames(o)
	var s string
	repeat := ""
	if strings.HasPrefix(o.Description, "(repeatable)") {
		repeat = "*"
	}
	if len(names) == 2 {
		s = shellQuote("("+strings.Join(names, " ")+")"+repeat) + "{" + strings.Join(names, ",") + "}"
	} else {
		s = shellQuote(repeat + names[0])
	}
	arg := ""
	if o.Arg != "" {
		action := " "
		switch k {
		case valueFile:
			action = "_files"
		case valueDir:
			action = "_files -/"
		case valueNetns:
			action = "_netreconcile_netns"
		case valueIface:
			action = "_net_interfaces"
		case valueFormat:
			action = "(" + strings.Join(outputFormats, " ") + ")"
		}
		arg = ":" + zshEscape(strings.ToLower(o.Arg)) + ":" + action
	}
	return s + shellQuote("["+desc+"]"+arg)
}

// zshEscape keeps a description from ending an _arguments field.
func zshEscape(s string) string {
	return strings.NewReplacer("[", "(", "]", ")", ":", "\\:", "\\", "").Replace(s)
}

func writeFish(b *strings.Builder, ctxs []compContext, kinds map[string]valueKind) {
	fmt.Fprintf(b, completionHeader, "fish", "fish")
	b.WriteString(`
# __netreconcile_ctx: the command (or ipam's subcommand) the cursor is in, or
# nothing; with --first, succeed only when no other word came after it.
function __netreconcile_ctx
    set -l words (commandline -opc)
    set -e words[1]
    set -l ctx ''
    set -l npos 0
    set -l skip 0
    for w in $words
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case '-*'
                if not string match -q -- '*=*' $w; and contains -- $w (__netreconcile_valued $ctx)
                    set skip 1
                end
                continue
        end
        if test $npos = 0; and contains -- $w (__netreconcile_words $ctx); and __netreconcile_known (string trim -- "$ctx $w")
            set ctx (string trim -- "$ctx $w")
            continue
        end
        set npos (math $npos + 1)
    end
    if contains -- --first $argv; and test $npos != 0
        return 1
    end
    echo $ctx
end

function __netreconcile_in
    if contains -- --first $argv
        set -l ctx (__netreconcile_ctx --first)
        or return 1
        test "$ctx" = "$argv[1]"
    else
        test "$(__netreconcile_ctx)" = "$argv[1]"
    end
end

function __netreconcile_netns
    ls /run/netns 2>/dev/null
end
`)
	b.WriteString("\nfunction __netreconcile_known\n    contains -- \"$argv[1]\"")
	for _, c := range ctxs {
		b.WriteString(" " + fishQuote(c.name))
	}
	b.WriteString("\nend\n")
	for _, f := range []struct {
		name string
		list func(c compContext) []string
	}{
		{"words", func(c compContext) []string {
			var out []string
			for _, w := range c.words {
				out = append(out, w.word)
			}
			return out
		}},
		{"valued", func(c compContext) []string {
			var out []string
			for _, o := range c.options {
				if o.Arg != "" {
					out = append(out, flagNames(o)...)
				}
			}
			return out
		}},
	} {
		fmt.Fprintf(b, "\nfunction __netreconcile_%s\n    switch \"$argv[1]\"\n", f.name)
		for _, c := range ctxs {
			if l := f.list(c); len(l) > 0 {
				fmt.Fprintf(b, "        case %s\n            printf '%%s\\n' %s\n", fishQuote(c.name), strings.Join(l, " "))
			}
		}
		b.WriteString("    end\nend\n")
	}
	b.WriteString("\ncomplete -c netreconcile -f\n")
	for _, c := range ctxs {
		if len(c.words) > 0 {
			b.WriteString("\n")
		}
		for _, w := range c.words {
			fmt.Fprintf(b, "complete -c netreconcile -n %s -a %s -d %s\n",
				fishQuote("__netreconcile_in "+fishQuote(c.name)+" --first"), fishQuote(w.word), fishQuote(w.summary))
		}
		if len(c.options) > 0 {
			b.WriteString("\n")
		}
		for _, o := range c.options {
			line := "complete -c netreconcile -n " + fishQuote("__netreconcile_in "+fishQuote(c.name))
			if o.Short != "" {
				line += " -s " + strings.TrimPrefix(o.Short, "-")
			}
			line += " -l " + strings.TrimPrefix(o.Long, "--")
			if o.Arg != "" {
				switch kinds[o.Long] {
				case valueFile:
					line += " -r -F"
				case valueDir:
					line += " -x -a '(__fish_complete_directories)'"
				case valueNetns:
					line += " -x -a '(__netreconcile_netns)'"
				case valueIface:
					line += " -x -a '(__fish_print_interfaces)'"
				case valueFormat:
					line += " -x -a " + fishQuote(strings.Join(outputFormats, " "))
				default:
					line += " -x"
				}
			}
			line += " -d " + fishQuote(o.Description)
			b.WriteString(line + "\n")
		}
	}
}

// shellQuote quotes s for bash and zsh: in single quotes, a quote inside
// as '\”.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish: in single quotes, where a backslash escapes
// a backslash or a quote.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", `\'`).Replace(s) + "'"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
