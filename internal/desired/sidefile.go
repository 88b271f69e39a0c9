package desired

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// Side files hold a configuration's bulk data beside its YAML, one item a
// line: a set's elements (elements-file, nft.go) and routes (routes-files,
// route_file.go). yaml.v3 builds a whole document as a tree of nodes
// before anything reads it, about a kilobyte per route of three keys: a
// table of 100k routes in YAML costs two hundred megabytes and half a
// second, where a line costs its bytes and the parse of its words. They are
// read as the configuration is: held to the same owner and mode
// (CheckTrusted), a regular file (symbolic links followed), bounded in
// size, and their errors are positioned like the YAML's (file:line:col).

// MaxSideBytes bounds the side files of one configuration together: a
// million routes in ip's words take about 45 MB, a million IPv6 prefixes
// about 25. A safe-apply transaction keeps two copies of the configuration
// (transaction.json), side files included.
const MaxSideBytes = 64 << 20

// sideFiles are the side files of one Parse: those the caller gave (a
// snapshot's, the daemon's last read), the others read when first named.
type sideFiles struct {
	opts  Options
	given map[string][]byte
	files map[string]*sideFile
	used  []Source
	total int
}

// sideFile is one side file, read.
type sideFile struct {
	path string
	// text is the content as one string, made once: the lines and their
	// words are slices of it.
	text string
	err  error
}

func newSideFiles(opts Options) *sideFiles {
	return &sideFiles{opts: opts, given: map[string][]byte{}, files: map[string]*sideFile{}}
}

// give holds a side file's content for Parse, as a caller read it before.
func (s *sideFiles) give(src Source) { s.given[filepath.Clean(src.Name)] = src.Data }

// sidePath is the path of a side file that the file from names: relative
// paths are from the naming file's directory, as a drop-in's are.
func sidePath(from, p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(filepath.Dir(from), p)
}

// get returns the side file at path (from sidePath), reading it the first
// time it is named.
func (s *sideFiles) get(path string) *sideFile {
	if f, ok := s.files[path]; ok {
		return f
	}
	f := &sideFile{path: path}
	s.files[path] = f
	left := MaxSideBytes - s.total
	data, given := s.given[path]
	switch {
	case !given && s.opts.read != nil:
		data, f.err = s.opts.read(path)
		if f.err == nil && len(data) > left {
			f.err = errTooBig(left)
		}
	case !given:
		data, f.err = readSide(path, !s.opts.AllowInsecure, left)
	case len(data) > left:
		f.err = errTooBig(left)
	}
	if f.err == nil {
		s.total += len(data)
		f.text = string(data)
		s.used = append(s.used, Source{Name: path, Data: data, Side: true})
	}
	if s.opts.Named != nil {
		s.opts.Named(Source{Name: path, Data: data, Side: true}, f.err)
	}
	return f
}

func errTooBig(left int) error {
	return fmt.Errorf("larger than the %d bytes left of the %d MiB that the side files of a configuration may hold together", left, MaxSideBytes>>20)
}

// ReadSide reads a side file as Parse does: held to CheckTrusted unless
// opts.AllowInsecure, a regular file, at most MaxSideBytes. A caller that
// reads the side files before a parse (the daemon) gives them to Parse.
func ReadSide(path string, opts Options) ([]byte, error) {
	return readSide(path, !opts.AllowInsecure, MaxSideBytes)
}

// readSide reads a side file: checked like the configuration files (when
// trust is set), a regular file, at most limit bytes.
func readSide(path string, trust bool, limit int) ([]byte, error) {
	if trust {
		if err := checkTrustedFile(path, "side file"); err != nil {
			return nil, err
		}
	}
	// Opened without waiting (O_NONBLOCK: opening a FIFO would wait for
	// a writer), then the descriptor is checked: a file swapped for a
	// FIFO between a stat and the open is still refused.
	f, err := openNoWait(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	if fi.Size() > int64(limit) {
		return nil, errTooBig(limit)
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > limit {
		return nil, errTooBig(limit)
	}
	return data, nil
}

// readError is the message of a side file that could not be read.
func readError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("cannot read the side file %s: %v", pe.Path, pe.Err)
	}
	return "cannot read the side file: " + err.Error()
}

// eachLine calls fn with every line of text that holds something: its
// number (from 1) and the line without its comment ("#" to the end) and
// trailing white space. Blank lines and comments are skipped; a byte order
// mark at the start is not part of the first line.
func eachLine(text string, fn func(no int, line string)) {
	text = strings.TrimPrefix(text, "\ufeff")
	for no := 1; text != ""; no++ {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimRight(line, " \t\r")
		if strings.TrimLeft(line, " \t") != "" {
			fn(no, line)
		}
	}
}

// lineCount is how many lines text has, at most: for sizing.
func lineCount(text string) int { return strings.Count(text, "\n") + 1 }

// word is a word of a line and its byte offset in the line.
type word struct {
	s   string
	off int
}

// splitWords splits a line at spaces and tabs, into buf.
func splitWords(line string, buf []word) []word {
	buf = buf[:0]
	for i := 0; i < len(line); {
		for i < len(line) && (line[i] == ' ' || line[i] == '\t') {
			i++
		}
		j := i
		for j < len(line) && line[j] != ' ' && line[j] != '\t' {
			j++
		}
		if j > i {
			buf = append(buf, word{line[i:j], i})
		}
		i = j
	}
	return buf
}

// col is the column (from 1) of byte offset off of line, counted in
// characters as yaml.v3 counts them.
func col(line string, off int) int {
	for i := 0; i < off; i++ {
		if line[i] >= utf8.RuneSelf {
			return utf8.RuneCountInString(line[:off]) + 1
		}
	}
	return off + 1
}
