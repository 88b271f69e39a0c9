package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/cli"
	"github.com/netreconcile/netreconcile/internal/desired"
	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/test/confschema"
	"github.com/netreconcile/netreconcile/test/nettest"
)

// repo is the repository's root, two levels up.
const repo = "../.."

// binary is the command make build builds (its version and commit
// stamped), for the runnable blocks: TestMain builds it, not under -short,
// where they skip.
var binary string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "netreconcile-docs")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "netreconcile")
	if out, err := exec.Command("make", "-s", "-C", repo, "build", "BIN="+binary).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "make build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// docFiles are the Markdown files whose blocks and commands are checked.
func docFiles(t *testing.T) map[string][]byte {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil || len(paths) < 5 {
		t.Fatalf("docs: %v", err)
	}
	paths = append(paths, filepath.Join(repo, "README.md"))
	out := map[string][]byte{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(repo, p)
		out[rel] = data
	}
	return out
}

func sortedNames(m map[string][]byte) []string {
	var names []string
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// help runs "netreconcile help WORDS..." in process: the text the binary
// prints.
func help(words ...string) (string, bool) {
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}, append([]string{"help"}, words...))
	return out.String(), code == 0
}

// commands are the commands "netreconcile help" lists.
func commands(t *testing.T) map[string]bool {
	t.Helper()
	text, ok := help()
	if !ok {
		t.Fatal("netreconcile help failed")
	}
	_, list, _ := strings.Cut(text, "\nCommands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	out := map[string]bool{}
	for _, l := range strings.Split(list, "\n") {
		if f := strings.Fields(l); len(f) > 0 && strings.HasPrefix(l, "  ") && !strings.HasPrefix(l, "    ") {
			out[f[0]] = true
		}
	}
	if len(out) < 8 {
		t.Fatalf("only %d commands in the help: %v", len(out), out)
	}
	return out
}

// otherTools are options the docs name in code of their own that are not
// netreconcile's: ansible-playbook's, in docs/ansible.md.
var otherTools = map[string]string{
	"--limit": "ansible-playbook --limit",
	"--diff":  "ansible-playbook --diff",
}

var flagRE = regexp.MustCompile(`^--?[a-zA-Z][a-zA-Z0-9-]*`)

// hasFlag reports whether the help text names the option.
func hasFlag(text, flag string) bool {
	re := regexp.MustCompile(`(^|[^a-zA-Z0-9-])` + regexp.QuoteMeta(flag) + `([^a-zA-Z0-9-]|$)`)
	return re.MatchString(text)
}

// TestCommandsAndFlagsExist: every "netreconcile COMMAND [OPTIONS]" in a
// code block or span of the docs names a command "netreconcile help"
// lists, and options "netreconcile help COMMAND" documents; an option
// named alone in code (`--state-dir`) is one of some command.
func TestCommandsAndFlagsExist(t *testing.T) {
	cmds := commands(t)
	helps := map[string]string{}
	helpOf := func(words ...string) (string, bool) {
		k := strings.Join(words, " ")
		if h, ok := helps[k]; ok {
			return h, true
		}
		h, ok := help(words...)
		if ok {
			helps[k] = h
		}
		return h, ok
	}
	all := ""
	for c := range cmds {
		h, _ := helpOf(c)
		all += h
	}
	checked := 0
	for _, name := range sortedNames(docFiles(t)) {
		data := docFiles(t)[name]
		var texts []struct {
			line int
			text string
		}
		for _, b := range Blocks(name, data) {
			texts = append(texts, struct {
				line int
				text string
			}{b.Line, b.Text})
		}
		for _, s := range Spans(data) {
			texts = append(texts, struct {
				line int
				text string
			}{s.Line, s.Text})
			// An option named alone: `--state-dir`, `--netns NAME`.
			if f := flagRE.FindString(s.Text); f != "" && strings.HasPrefix(s.Text, "--") {
				if _, other := otherTools[f]; !other && !hasFlag(all, f) {
					t.Errorf("%s:%d: `%s`: no command of netreconcile has %s", name, s.Line, s.Text, f)
				}
				checked++
			}
		}
		for _, tx := range texts {
			for _, inv := range Invocations(tx.text) {
				checked++
				w := inv.Words
				switch {
				case strings.HasPrefix(w[0], "-"):
					if h, _ := helpOf(); !hasFlag(h, w[0]) && w[0] != "--version" {
						t.Errorf("%s:%d: %q: netreconcile has no option %s before a command", name, tx.line, inv.Text, w[0])
					}
					continue
				case w[0] == strings.ToUpper(w[0]):
					continue // COMMAND, CMD: a placeholder
				case !cmds[w[0]]:
					t.Errorf("%s:%d: %q: netreconcile has no command %q (netreconcile help lists %v)", name, tx.line, inv.Text, w[0], sortedKeys(cmds))
					continue
				}
				words := []string{w[0]}
				if w[0] == "help" {
					if len(w) > 1 && w[1] != strings.ToUpper(w[1]) {
						if _, ok := helpOf(w[1:]...); !ok {
							t.Errorf("%s:%d: %q: netreconcile help has no page %q", name, tx.line, inv.Text, strings.Join(w[1:], " "))
						}
					}
					continue
				}
				// A subcommand (ipam allocate) has a help page of its own.
				if len(w) > 1 && !strings.HasPrefix(w[1], "-") {
					if _, ok := helpOf(w[0], w[1]); ok {
						words = append(words, w[1])
					}
				}
				h, _ := helpOf(words...)
				for _, word := range w[1:] {
					f := flagRE.FindString(word)
					if f == "" || !strings.HasPrefix(word, "-") {
						continue
					}
					if !hasFlag(h, f) {
						t.Errorf("%s:%d: %q: netreconcile help %s has no option %s", name, tx.line, inv.Text, strings.Join(words, " "), f)
					}
				}
			}
		}
	}
	// The examples' and the packaged file's comments name commands too.
	others, _ := filepath.Glob(filepath.Join(repo, "examples", "*.*"))
	others = append(others, filepath.Join(repo, "packaging", "netreconcile.yaml"))
	for _, p := range others {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		// In a YAML file's comments, the code: an indented comment line
		// (a command to type) and what is in backticks.
		code := string(data)
		if strings.HasSuffix(p, ".yaml") {
			var b strings.Builder
			for _, l := range strings.Split(code, "\n") {
				c, ok := strings.CutPrefix(strings.TrimSpace(l), "#")
				switch {
				case !ok:
				case strings.HasPrefix(c, "  "):
					// Without its own comment: "#   protocol: 245   # what netreconcile owns".
					c, _, _ = strings.Cut(c, " # ")
					b.WriteString(c + "\n")
				default:
					for _, m := range spanRE.FindAllStringSubmatch(c, -1) {
						b.WriteString(m[1] + "\n")
					}
				}
			}
			code = b.String()
		}
		for _, inv := range Invocations(code) {
			checked++
			if w := inv.Words[0]; !cmds[w] && !strings.HasPrefix(w, "-") && w != strings.ToUpper(w) && !strings.HasPrefix(w, "$") {
				t.Errorf("%s: %q: netreconcile has no command %q", p, inv.Text, w)
				continue
			}
			h, _ := helpOf(inv.Words[0])
			for _, word := range inv.Words[1:] {
				if f := flagRE.FindString(word); f != "" && strings.HasPrefix(word, "-") && !hasFlag(h, f) {
					t.Errorf("%s: %q: netreconcile help %s has no option %s", p, inv.Text, inv.Words[0], f)
				}
			}
		}
	}
	if checked < 100 {
		t.Errorf("only %d command lines and options checked: the search is broken", checked)
	}
	t.Logf("%d command lines and options checked against the help", checked)
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// topKeys are the configuration's top-level keys.
func topKeys() map[string]bool {
	out := map[string]bool{}
	for _, k := range desired.SchemaKeys() {
		top, _, _ := strings.Cut(k, ".")
		out[strings.TrimSuffix(top, "[]")] = true
	}
	return out
}

// configText makes a configuration file of a YAML block of the docs, when
// it is one: a block of link entries (indented) goes under links, and a
// file without version gets "version: 1". Other YAML (an Ansible play) is
// not a configuration.
func configText(b Block) (string, bool) {
	text := b.Text
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(strings.TrimSpace(l), "#") {
			continue
		}
		if strings.HasPrefix(l, " ") {
			text = "links:\n" + text
		}
		break
	}
	var v any
	if err := yaml.Unmarshal([]byte(text), &v); err != nil {
		return "", false // not YAML: reported as such
	}
	m, _ := v.(map[string]any)
	tops := topKeys()
	config := false
	for k := range m {
		config = config || tops[k]
	}
	if !config {
		return "", false
	}
	if _, ok := m["version"]; !ok {
		text = "version: 1\n" + text
	}
	return text, true
}

// merge puts what ctx holds and v lacks into v, mapping by mapping.
func merge(v, ctx map[string]any) {
	for k, c := range ctx {
		cur, ok := v[k]
		if !ok {
			v[k] = c
			continue
		}
		if cm, ok := c.(map[string]any); ok {
			if vm, ok := cur.(map[string]any); ok {
				merge(vm, cm)
			}
		}
	}
}

// sandboxPaths are the absolute directories the docs' snippets name, made
// under a test's directory when they are validated.
var sandboxPaths = []string{"/etc/netreconcile/", "/var/lib/"}

func inRoot(root, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Join(root, p)
	}
	return filepath.Join(root, "work", p)
}

func rootPaths(root, text string) string {
	for _, p := range sandboxPaths {
		text = strings.ReplaceAll(text, p, filepath.Join(root, p)+"/")
	}
	return text
}

// testKey is a WireGuard private key the key directives write.
const testKey = "yO/W+1rA6/xDsIaPbtDBR7A3YUD3AjTQAxgWUdYqbWc=\n"

// TestYAMLBlocksValidate: every YAML block of the docs that is a
// configuration (or a part of one) validates against the committed schema,
// and loads with netreconcile validate (with the context its docs-test
// comment gives: the links it names, the files it reads); every other YAML
// block parses, and so does every JSON block.
func TestYAMLBlocksValidate(t *testing.T) {
	s, err := confschema.Committed(filepath.Join(repo, "docs", "schema", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	configs, others := 0, 0
	for _, name := range sortedNames(docFiles(t)) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, "work"), 0o700); err != nil {
			t.Fatal(err)
		}
		blocks := Blocks(name, docFiles(t)[name])
		// The files first: a snippet comes before the file it names.
		for _, b := range blocks {
			where := fmt.Sprintf("%s:%d", name, b.Line)
			for _, d := range b.Directives {
				verb, arg, _ := strings.Cut(d, " ")
				switch verb {
				case "file", "empty-file", "key":
					p := inRoot(root, arg)
					content, mode := b.Text, os.FileMode(0o644)
					switch verb {
					case "empty-file":
						content = ""
					case "key":
						content, mode = testKey, 0o600
					}
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, []byte(content), mode); err != nil {
						t.Fatal(err)
					}
				case "with":
				default:
					t.Errorf("%s: unknown docs-test directive %q", where, d)
				}
			}
		}
		for i, b := range blocks {
			where := fmt.Sprintf("%s:%d", name, b.Line)
			switch b.Lang() {
			case "json":
				if !json.Valid([]byte(b.Text)) {
					t.Errorf("%s: the JSON block does not parse", where)
				}
				continue
			case "yaml":
			default:
				continue
			}
			text, ok := configText(b)
			if !ok {
				others++
				var v any
				if err := yaml.Unmarshal([]byte(b.Text), &v); err != nil {
					t.Errorf("%s: the YAML block does not parse: %v", where, err)
				}
				continue
			}
			configs++
			if err := confschema.Validate(s, []byte(text)); err != nil {
				t.Errorf("%s: the snippet does not validate against docs/schema/config.json: %v\n%s", where, err, text)
			}
			// netreconcile validate, with the snippet's context.
			for _, d := range b.Directives {
				if ctx, ok := strings.CutPrefix(d, "with "); ok {
					var v, c map[string]any
					if err := yaml.Unmarshal([]byte(text), &v); err != nil {
						t.Fatalf("%s: %v", where, err)
					}
					if err := yaml.Unmarshal([]byte(ctx), &c); err != nil {
						t.Fatalf("%s: the docs-test context does not parse: %v", where, err)
					}
					merge(v, c)
					out, err := yaml.Marshal(v)
					if err != nil {
						t.Fatal(err)
					}
					text = string(out)
				}
			}
			file := filepath.Join(root, "work", fmt.Sprintf("snippet-%d.yaml", i))
			if err := os.WriteFile(file, []byte(rootPaths(root, text)), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := nettest.CLI(t, "validate", "-c", file); r.Code != 0 {
				t.Errorf("%s: netreconcile validate refuses the snippet (give what it refers to in a <!-- docs-test: with ... --> comment):\n%s%s\n%s", where, r.Stdout, r.Stderr, text)
			}
		}
	}
	if configs < 20 {
		t.Errorf("only %d configuration snippets found", configs)
	}
	t.Logf("%d configuration snippets validate and load; %d other YAML blocks parse", configs, others)
}

// The schema's modeline, as the examples (relative) and the packaged file
// (where the package installs the schema) give it.
const (
	exampleModeline  = "# yaml-language-server: $schema=../docs/schema/config.json"
	packagedModeline = "# yaml-language-server: $schema=/usr/share/netreconcile/schema/config.json"
)

// TestExamplesValidate: every example and the packaged configuration start
// with the schema's modeline, validate against the schema and load.
func TestExamplesValidate(t *testing.T) {
	s, err := confschema.Committed(filepath.Join(repo, "docs", "schema", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(repo, "examples", "*.yaml"))
	if err != nil || len(paths) < 5 {
		t.Fatalf("examples: %v", err)
	}
	paths = append(paths, filepath.Join(repo, "packaging", "netreconcile.yaml"))
	root := t.TempDir()
	for _, k := range []string{"/etc/netreconcile/kubespan.key", "/etc/netreconcile/node2.psk"} {
		p := inRoot(root, k)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(testKey), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		want := exampleModeline
		if filepath.Base(filepath.Dir(p)) == "packaging" {
			want = packagedModeline
		}
		if first, _, _ := strings.Cut(string(data), "\n"); first != want {
			t.Errorf("%s: the first line is %q, want the schema's modeline %q", p, first, want)
		}
		if err := confschema.Validate(s, data); err != nil {
			t.Errorf("%s does not validate against docs/schema/config.json: %v", p, err)
		}
		file := filepath.Join(root, "work", filepath.Base(p))
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(rootPaths(root, string(data))), 0o644); err != nil {
			t.Fatal(err)
		}
		if r := nettest.CLI(t, "validate", "-c", file); r.Code != 0 {
			t.Errorf("%s: netreconcile validate: %s%s", p, r.Stdout, r.Stderr)
		}
	}
}

// TestSummariesNameEveryPart: the help's summary and the README's list of
// what one file declares name every link kind, and every part of the file.
func TestSummariesNameEveryPart(t *testing.T) {
	mainHelp, _ := help()
	summary := mainHelp[strings.Index(mainHelp, "\nnetreconcile reads"):]
	summary, _, _ = strings.Cut(summary, "\n\n")
	readme, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	declares := string(readme)
	declares = declares[strings.Index(declares, "One file declares"):]
	declares, _, _ = strings.Cut(declares, "\n\n## ")
	parts := append([]string{"addresses", "routes", "rules", "FoU", "nftables", "WireGuard", "peers", "sysctls", "IPAM"}, model.Kinds...)
	for _, p := range parts {
		if p == model.KindDevice {
			continue
		}
		for what, text := range map[string]string{"netreconcile help's summary": summary, "README's list": declares} {
			if !strings.Contains(strings.ToLower(text), strings.ToLower(p)) {
				t.Errorf("%s does not name %s:\n%s", what, p, text)
			}
		}
	}
}
