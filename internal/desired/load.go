package desired

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/netreconcile/netreconcile/internal/model"
)

// Source is one configuration file's content.
type Source struct {
	Name string
	Data []byte
}

// Config is a validated configuration.
type Config struct {
	State *model.State
	// Files lists the files read, main file first.
	Files []string
}

// DropInDir returns the drop-in directory of a main file: conf.d next to it.
func DropInDir(mainFile string) string {
	return filepath.Join(filepath.Dir(mainFile), "conf.d")
}

// ReadSources reads the main file and then every *.yaml / *.yml file of the
// drop-in directory in name order. A missing drop-in directory is not an error.
func ReadSources(mainFile, dropIn string) ([]Source, error) {
	data, err := os.ReadFile(mainFile)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	srcs := []Source{{mainFile, data}}
	if dropIn == "" {
		return srcs, nil
	}
	entries, err := os.ReadDir(dropIn)
	if errors.Is(err, fs.ErrNotExist) {
		return srcs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read drop-in directory: %w", err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.Type().IsRegular() && !strings.HasPrefix(n, ".") && (strings.HasSuffix(n, ".yaml") || strings.HasSuffix(n, ".yml")) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(dropIn, n)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read drop-in: %w", err)
		}
		srcs = append(srcs, Source{p, data})
	}
	return srcs, nil
}

// Load reads and validates a main file and its drop-in directory.
func Load(mainFile, dropIn string) (*Config, error) {
	srcs, err := ReadSources(mainFile, dropIn)
	if err != nil {
		return nil, err
	}
	return Parse(srcs)
}

// Parse validates sources (the first is the main file) into a Config. On
// failure the error is an Errors listing every problem found.
func Parse(srcs []Source) (*Config, error) {
	errs := &errList{}
	var confs []*fileConf
	var files []string
	for i, src := range srcs {
		files = append(files, src.Name)
		fc := decodeFile(src, errs)
		if fc == nil {
			continue
		}
		if i > 0 && fc.has("version") && fc.Version != CurrentVersion {
			errs.add(fc.at("version"), "version", "drop-in files must use version %d like the main file", CurrentVersion)
		}
		confs = append(confs, fc)
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
	st := build(confs, errs)
	if err := errs.err(); err != nil {
		return nil, err
	}
	return &Config{State: st, Files: files}, nil
}

func decodeYAML(name string, data []byte, errs *errList) *fileConf {
	return decodeYAMLCut(name, data, nil, errs)
}

// decodeYAMLCut decodes data from which the flows were cut (fastflow.go);
// it returns nil without an error when they were not all sequences.
func decodeYAMLCut(name string, data []byte, flows map[flowKey]*flowCut, errs *errList) *fileConf {
	src := Source{Name: name}
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			// An empty drop-in is allowed; an empty main file is caught by the version check.
			return &fileConf{Meta: Meta{Pos: Pos{File: src.Name}, Keys: map[string]Pos{}}}
		}
		errs.add(Pos{File: src.Name, Line: yamlErrLine(err)}, "", "not valid YAML: %s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil
	}
	if flows != nil && !markFlows(&root, flows) {
		return nil
	}
	d := &decoder{file: src.Name, errs: errs, flows: flows}
	fc := &fileConf{}
	doc := &root
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		doc = doc.Content[0]
	}
	d.decodeStruct(doc, "", reflectValue(fc))
	if fc.Keys == nil {
		fc.Pos, fc.Keys = d.pos(doc), map[string]Pos{}
	}
	if flows != nil && !d.allUsed() {
		return nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		errs.add(Pos{src.Name, extra.Line, extra.Column}, "", "a second YAML document; put everything in one document (use conf.d/ for fragments)")
	}
	return fc
}
