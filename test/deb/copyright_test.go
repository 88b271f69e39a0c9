// Package deb tests the Debian package's sources (packaging/): its
// copyright file against the Go modules the binary links. make deb-check
// runs lintian and systemd-analyze on the built package.
package deb

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// paragraph is one paragraph of a machine-readable copyright file: its
// fields, a continued field's lines joined with "\n".
type paragraph map[string]string

func readCopyright(t *testing.T) []paragraph {
	t.Helper()
	f, err := os.Open("../../packaging/copyright")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []paragraph
	cur, last := paragraph{}, ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.TrimSpace(l) == "":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur, last = paragraph{}, ""
		case l[0] == ' ' || l[0] == '\t':
			if last == "" {
				t.Fatalf("copyright: continuation line %q outside a field", l)
			}
			cur[last] += "\n" + strings.TrimPrefix(l, " ")
		default:
			k, v, ok := strings.Cut(l, ":")
			if !ok {
				t.Fatalf("copyright: %q is no field", l)
			}
			last = k
			cur[k] = strings.TrimSpace(v)
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	if len(out) < 3 || out[0]["Format"] == "" {
		t.Fatalf("copyright: no header paragraph with Format:")
	}
	return out
}

// module is a Go module linked into the binary, or the toolchain.
type module struct{ path, dir string }

// linked lists the modules cmd/netreconcile links, as `go list` resolves
// them (the same set `go version -m` shows for the built binary), and the
// toolchain's tree as GOROOT.
func linked(t *testing.T) []module {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}",
		"github.com/netreconcile/netreconcile/cmd/netreconcile").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var mods []module
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if p, d, ok := strings.Cut(l, " "); ok && !slices.Contains(mods, module{p, d}) {
			mods = append(mods, module{p, d})
		}
	}
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 5 {
		t.Fatalf("go list found %d modules", len(mods))
	}
	return append(mods, module{"GOROOT", strings.TrimSpace(string(root))})
}

// licenseFiles reads a module's LICENSE*, COPYING* and NOTICE* files.
func licenseFiles(t *testing.T, dir string) (licenses, notices []string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		name := strings.ToUpper(e.Name())
		if e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case strings.HasPrefix(name, "LICEN") || strings.HasPrefix(name, "COPYING"):
			licenses = append(licenses, string(b))
		case strings.HasPrefix(name, "NOTICE"):
			notices = append(notices, string(b))
		}
	}
	return licenses, notices
}

// classify names the licences a licence file holds, by the sentences that
// make them what they are.
func classify(text string) []string {
	var out []string
	if strings.Contains(text, "Apache License") && strings.Contains(text, "Version 2.0") {
		out = append(out, "Apache-2.0")
	}
	if strings.Contains(text, "Permission is hereby granted, free of charge") {
		out = append(out, "Expat")
	}
	if strings.Contains(text, "Redistribution and use in source and binary forms") {
		switch {
		case strings.Contains(text, "Neither the name"):
			out = append(out, "BSD-3-Clause")
		default:
			out = append(out, "BSD-2-Clause")
		}
	}
	if strings.Contains(text, "Mozilla Public License") {
		out = append(out, "MPL-2.0")
	}
	if strings.Contains(text, "ISC License") || strings.Contains(text, "Permission to use, copy, modify, and/or distribute") {
		out = append(out, "ISC")
	}
	return out
}

// norm compares texts by their words alone.
func norm(s string) string {
	s = regexp.MustCompile(`(?m)^\s*\.\s*$`).ReplaceAllString(s, " ")
	s = regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(s, " ")
	return strings.ToLower(strings.Join(strings.Fields(s), " "))
}

// copyrightLine matches a licence file's copyright notice, not the
// Apache licence's template ("Copyright [yyyy] [name of copyright owner]",
// or with braces).
var copyrightLine = regexp.MustCompile(`(?m)^\s*Copyright\s+(?:(?i:\(c\))\s*|©\s*)?([^\[{\n]+)$`)

// TestCopyrightCoversLinkedModules: packaging/copyright has a Files
// paragraph for every module linked into /usr/sbin/netreconcile and the Go
// toolchain (vendor/MODULE/*, GOROOT/*) and none for a module that is not;
// each names the licences the module's own licence files hold, with their
// copyright lines and the text of any NOTICE file; and the text given for
// BSD and Expat licences is the module's, word for word. A dependency
// added, dropped or relicensed fails here until the file says so.
func TestCopyrightCoversLinkedModules(t *testing.T) {
	paras := readCopyright(t)
	whole, err := os.ReadFile("../../packaging/copyright")
	if err != nil {
		t.Fatal(err)
	}
	standalone := map[string]string{}
	for _, p := range paras {
		if _, ok := p["Files"]; !ok && p["License"] != "" {
			name, text, _ := strings.Cut(p["License"], "\n")
			standalone[name] = text
		}
	}
	// Files paragraphs by module: "vendor/MOD/*" or "GOROOT/*" as a pattern.
	byModule := map[string]paragraph{}
	for _, p := range paras {
		for _, pat := range strings.Fields(p["Files"]) {
			if m, ok := strings.CutSuffix(strings.TrimPrefix(pat, "vendor/"), "/*"); ok {
				byModule[m] = p
			}
		}
	}
	mods := linked(t)
	for _, m := range mods {
		p, ok := byModule[m.path]
		if !ok {
			lic, _ := licenseFiles(t, m.dir)
			var names []string
			for _, l := range lic {
				names = append(names, classify(l)...)
			}
			t.Errorf("packaging/copyright has no paragraph \"Files: vendor/%s/*\" (licence files: %v)", m.path, names)
			continue
		}
		lics, notices := licenseFiles(t, m.dir)
		if len(lics) == 0 {
			t.Errorf("%s: no licence file in %s", m.path, m.dir)
			continue
		}
		var want []string
		for _, l := range lics {
			want = append(want, classify(l)...)
		}
		slices.Sort(want)
		want = slices.Compact(want)
		// The module's licences: its paragraph's, and those of
		// paragraphs naming some of its files (go.yaml.in/yaml/v3's
		// files ported from libyaml).
		var got []string
		for _, q := range paras {
			if strings.Contains(" "+strings.ReplaceAll(q["Files"], "\n", " ")+" ", " vendor/"+m.path+"/") || q["Files"] == p["Files"] {
				name, _, _ := strings.Cut(q["License"], "\n")
				got = append(got, strings.Fields(strings.NewReplacer(" and ", " ", " or ", " ").Replace(name))...)
			}
		}
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: packaging/copyright names %v, its licence files hold %v", m.path, got, want)
		}
		for _, l := range lics {
			for _, c := range copyrightLine.FindAllStringSubmatch(l, -1) {
				holder := strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(c[1]), "All rights reserved."))
				// "2006-2010 Kirill Simonov": the holder, without the years.
				name := strings.TrimSpace(regexp.MustCompile(`^[0-9, -]+`).ReplaceAllString(holder, ""))
				if !strings.Contains(norm(string(whole)), norm(name)) {
					t.Errorf("%s: the copyright holder %q of its licence file is not in packaging/copyright", m.path, name)
				}
			}
			// Texts Debian does not ship in /usr/share/common-licenses
			// are given in full: the module's own, word for word.
			for _, name := range classify(l) {
				if name == "Apache-2.0" {
					continue
				}
				text := standalone[name]
				if _, inline, ok := strings.Cut(p["License"], "\n"); ok && strings.HasPrefix(p["License"], name) {
					text = inline
				}
				if text == "" {
					t.Errorf("%s: no text for licence %s", m.path, name)
					continue
				}
				if licenceBody(l, name) != norm(text) {
					t.Errorf("%s: its %s text differs from packaging/copyright's", m.path, name)
				}
			}
		}
		for _, n := range notices {
			if !strings.Contains(norm(p["Comment"]), norm(n)) {
				t.Errorf("%s: its NOTICE file is not in its paragraph's Comment:\n%s", m.path, n)
			}
		}
	}
	// No paragraph for a module that is not linked.
	for path := range byModule {
		if !slices.ContainsFunc(mods, func(m module) bool { return m.path == path }) {
			t.Errorf("packaging/copyright has a paragraph for %s, which the binary does not link", path)
		}
	}
	if t.Failed() {
		t.Logf("modules linked: %d", len(mods))
	}
}

// licenceBody is the normalised text of one licence of a licence file,
// from its first sentence to its disclaimer's end (a file may hold two).
func licenceBody(text, name string) string {
	n := norm(text)
	start, end := map[string]string{
		"Expat":        "permission is hereby granted",
		"BSD-3-Clause": "redistribution and use",
		"BSD-2-Clause": "redistribution and use",
	}[name], ""
	switch name {
	case "Expat":
		end = "other dealings in the software"
	default:
		end = "possibility of such damage"
	}
	i := strings.Index(n, start)
	j := strings.Index(n, end)
	if start == "" || i < 0 || j < i {
		return n
	}
	return n[i : j+len(end)]
}
