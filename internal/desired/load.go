package desired

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/netreconcile/netreconcile/internal/model"
	"github.com/netreconcile/netreconcile/internal/redact"
)

// Source is one configuration file's content: the main file, a drop-in,
// or a side file that one of them names (Side).
type Source struct {
	Name string
	Data []byte
	// Side marks a side file (routes-files, elements-file: sidefile.go),
	// as Config.Sides gives them back. Parse takes a side file the
	// configuration names from the sources when one of them has its
	// path, as a snapshot holds it, and reads it otherwise.
	Side bool
}

// Config is a validated configuration.
type Config struct {
	State *model.State
	// Files lists the YAML files read, main file first.
	Files []string
	// Sides are the side files the configuration names, as they were
	// read, in the order first named: a caller that keeps what a
	// configuration was made of (safe apply, the daemon) keeps them too.
	Sides []Source
}

// Options say how Parse reads the side files the configuration names.
type Options struct {
	// AllowInsecure reads side files that CheckTrusted would refuse
	// (--allow-insecure-config); without it a side file is held to the
	// same owner and mode as the configuration files.
	AllowInsecure bool
	// Named, when set, is called once for each side file the
	// configuration names, in order, with its content or why it could
	// not be read, also when the configuration is invalid: the daemon
	// watches them, and a file the configuration names and cannot read
	// is one to watch for.
	Named func(src Source, err error)
	// read replaces the reading of side files from the disk, for the
	// tests whose inputs are made up (the fuzz targets): they read none.
	read func(path string) ([]byte, error)
}

// DropInDir returns the drop-in directory of a main file: conf.d next to it.
func DropInDir(mainFile string) string {
	return filepath.Join(filepath.Dir(mainFile), "conf.d")
}

// MaxFileSize bounds a configuration file, the main file or a drop-in: one
// larger is refused before it is read. The largest files the benchmarks
// load, 100k routes (test/bench/parse), take 4.9 MB in flow style and 5.3
// MB in block style; the daemon's memory benchmark's file (100k routes, a
// 100k-element set and 1,000 peers) 5.9 MB. The loader's peak memory is
// about 20 times a file's size, so the bound also caps what one file can
// cost: a 1 GiB drop-in was read whole before.
const MaxFileSize = 32 << 20

// ReadFile reads a configuration file, at most MaxFileSize bytes: a larger
// one is refused by its size before its content is read, and one that
// grows past it while it is read (or is not a regular file, which has no
// size) is refused once MaxFileSize+1 bytes came.
func ReadFile(path string) ([]byte, error) {
	ownName(path)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Mode().IsRegular() && fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s: %w (%d bytes)", path, errTooLarge, fi.Size())
	}
	// Read into a buffer of the file's size: io.ReadAll grows from 512
	// bytes, copying (a file of 1,000 rules was read into 350 kB).
	hint := int64(0)
	if fi.Mode().IsRegular() {
		hint = fi.Size()
	}
	buf := bytes.NewBuffer(make([]byte, 0, hint+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, MaxFileSize+1)); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: %w", path, errTooLarge)
	}
	return data, nil
}

// ownName tells redaction that path is a name this program prints itself
// (a file it reads as configuration, the drop-in directory), in the form
// given and absolute: never a value to judge (package redact).
func ownName(path string) {
	redact.Own(path)
	if abs, err := filepath.Abs(path); err == nil {
		redact.Own(abs)
	}
}

var errTooLarge = fmt.Errorf("larger than %d MiB, the most a configuration file may hold", MaxFileSize>>20)

// ReadSources reads the main file and then every *.yaml / *.yml file of the
// drop-in directory in name order. A missing drop-in directory is not an error.
func ReadSources(mainFile, dropIn string) ([]Source, error) {
	srcs, _, err := ReadSourcesDir(mainFile, dropIn)
	return srcs, err
}

// ReadSourcesDir is ReadSources that also reports whether the drop-in
// directory exists, which a caller that keeps a last good configuration
// needs: a directory that vanished may be a deploy swapping it.
//
// Symbolic links are followed, in the drop-in directory as for the main
// file (a fragment may be a link into a package's or a deploy's tree). A
// link that dangles or loops, or a *.yaml name that is not a regular file,
// is an error naming its path: skipping it would silently drop what it
// declares.
func ReadSourcesDir(mainFile, dropIn string) (srcs []Source, dropInPresent bool, err error) {
	data, err := ReadFile(mainFile)
	if err != nil {
		return nil, false, fmt.Errorf("read config: %w", err)
	}
	srcs = []Source{{Name: mainFile, Data: data}}
	if dropIn == "" {
		return srcs, false, nil
	}
	ownName(dropIn)
	entries, err := os.ReadDir(dropIn)
	if errors.Is(err, fs.ErrNotExist) {
		return srcs, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read drop-in directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dropIn, n)
		// Stat follows links: ELOOP and a dangling link fail here.
		fi, err := os.Stat(p)
		if err != nil {
			return nil, true, fmt.Errorf("read drop-in %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, true, fmt.Errorf("read drop-in %s: not a regular file (%s); a fragment must be a file or a link to one", p, fi.Mode().Type())
		}
		data, err := ReadFile(p)
		if err != nil {
			return nil, true, fmt.Errorf("read drop-in: %w", err)
		}
		srcs = append(srcs, Source{Name: p, Data: data})
	}
	return srcs, true, nil
}

// Load reads and validates a main file and its drop-in directory, and the
// side files they name.
func Load(mainFile, dropIn string) (*Config, error) {
	return LoadWith(mainFile, dropIn, Options{})
}

// LoadWith is Load with options.
func LoadWith(mainFile, dropIn string, opts Options) (*Config, error) {
	srcs, err := ReadSources(mainFile, dropIn)
	if err != nil {
		return nil, err
	}
	return ParseWith(srcs, opts)
}

// Parse validates sources (the first is the main file) into a Config. On
// failure the error is an Errors listing every problem found.
func Parse(srcs []Source) (*Config, error) {
	return ParseWith(srcs, Options{})
}

// collectAfter is the size of YAML from which ParseWith collects the
// decoder's garbage before building: a collection costs about a
// millisecond per megabyte of what is still live, a small part of the
// decoding's time.
const collectAfter = 256 << 10

// ParseWith is Parse with options.
func ParseWith(srcs []Source, opts Options) (*Config, error) {
	errs := &errList{}
	var confs []*fileConf
	var files []string
	sides := newSideFiles(opts)
	yamls := srcs[:0:0]
	for _, src := range srcs {
		if src.Side {
			sides.give(src)
		} else {
			yamls = append(yamls, src)
		}
	}
	srcs = yamls
	size := 0
	for i, src := range srcs {
		size += len(src.Data)
		files = append(files, src.Name)
		fc := decodeYAML(src.Name, src.Data, errs)
		if fc == nil {
			continue
		}
		// Every fragment carries its version, so that a fragment read while
		// it is being written (empty, or cut before its first key) is an
		// error, and the last good configuration stays in force.
		switch {
		case i == 0:
		case !fc.has("version"):
			errs.add(fc.Pos, "version", "missing; expected \"version: %d\" at the top of every drop-in (an empty or cut fragment is refused)", CurrentVersion)
		case fc.Version != CurrentVersion:
			errs.add(fc.at("version"), "version", "drop-in files must use version %d like the main file", CurrentVersion)
		}
		confs = append(confs, fc)
	}
	if size >= collectAfter {
		// The documents' node trees are garbage now, and were most of
		// what decoding allocated (about 170 bytes a node: a megabyte of
		// one-character rules is 90 MB of nodes). Left to the pacer, whose
		// goal the tree doubled, the model is built on top of them; and
		// the model's long lists are large allocations, which the tree's
		// freed small-object pages cannot serve. Collected and given back
		// to the kernel here, they leave the peak at the larger of the two
		// stages instead of their sum.
		debug.FreeOSMemory()
	}
	if len(confs) > 0 && len(srcs) > 0 && confs[0].Pos.File == srcs[0].Name {
		main := confs[0]
		switch {
		case !main.has("version"):
			errs.add(main.Pos, "version", "missing; expected \"version: %d\" at the top of the main file", CurrentVersion)
		case main.Version != CurrentVersion:
			errs.add(main.at("version"), "version", "unsupported version %d; this netreconcile reads version %d", main.Version, CurrentVersion)
		}
	}
	st := build(confs, errs, sides)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return &Config{State: st, Files: files, Sides: sides.used}, nil
}

// decodeYAML decodes one file; nil when it is not one YAML document (the
// error is in errs).
func decodeYAML(name string, data []byte, errs *errList) *fileConf {
	src := Source{Name: name}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			// Nothing but comments and blank lines: the version checks
			// in Parse refuse it, so a fragment caught empty in the
			// middle of its write is never "declare nothing".
			return &fileConf{Meta: Meta{Pos: Pos{File: src.Name, Line: 1, Col: 1}}}
		}
		errs.add(yamlErrPos(name, data, err), "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	d := &decoder{file: src.Name, errs: errs}
	// What follows the first document is checked before the first is
	// decoded, so that a file yaml.v3 cannot read to its end is refused
	// whole: it was cut or mistyped, and half of it is not a declaration.
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		errs.add(yamlErrPos(name, data, err), "", "text after the end of the first YAML document (%s); a key indented unlike the first key, or anything after a \"...\" line, ends the document: fix the indentation or remove the text", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	default:
		p := d.pos(&extra)
		if extra.Kind == yaml.DocumentNode && len(extra.Content) == 1 {
			p = d.pos(extra.Content[0])
		}
		errs.add(p, "", "a second YAML document; put everything in one document (use conf.d/ for fragments)")
		return nil
	}
	if !d.checkAliases(&root) {
		return nil
	}
	fc := &fileConf{}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	d.decodeStruct(doc, "", reflectValue(fc))
	if len(fc.keys) == 0 {
		fc.Pos = d.pos(doc)
	}
	return fc
}
