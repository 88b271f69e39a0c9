package desired

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/netreconcile/netreconcile/internal/model"
)

// side is a side file given to Parse, as a snapshot gives it.
func side(name, content string) Source {
	return Source{Name: name, Data: []byte(content), Side: true}
}

const sideHead = "version: 1\nlinks:\n  eth0: {kind: device}\n  eth1: {kind: device}\n"

// withoutOrigins drops what says where each object was written: the same
// objects from YAML and from a side file differ only there.
func withoutOrigins(st *model.State) *model.State {
	c := *st
	c.Routes = slices.Clone(st.Routes)
	for i := range c.Routes {
		c.Routes[i].Origin = model.Origin{}
	}
	c.NFTables = slices.Clone(st.NFTables)
	for i := range c.NFTables {
		c.NFTables[i].Origin = ""
		c.NFTables[i].Sets = slices.Clone(c.NFTables[i].Sets)
		for j := range c.NFTables[i].Sets {
			c.NFTables[i].Sets[j].Origin = ""
		}
	}
	return &c
}

// A routes file gives the routes its lines say in ip-route(8)'s words, the
// same as YAML would: comments, blank lines, CRLF, tabs, the file's table.
func TestRoutesFile(t *testing.T) {
	lines := "# upstream table\r\n" +
		"\n" +
		"10.1.0.0/16 via 10.0.0.1 dev eth0   # a comment\r\n" +
		"\tblackhole 10.2.0.0/16 table 200\n" +
		"default via 10.0.0.254 metric 100 mtu 1400\n" +
		"2001:db8::/32 dev eth1 src 2001:db8::1 preference 5\n" +
		"10.3.0.0/24 via inet6 fe80::1 dev eth0\n" +
		"10.4.0.0/24 nexthop via 10.0.0.1 dev eth0 weight 3 nexthop via 10.0.1.1 dev eth1\n" +
		"10.5.0.0/24 via 10.0.0.9 dev eth0 onlink scope global tos 0x10\n" +
		"unreachable 10.6.0.0/24"
	got, err := Parse([]Source{
		src("/etc/nr/main.yaml", sideHead+"routes-files:\n  - {file: up.routes, table: 100}\n"),
		side("/etc/nr/up.routes", lines),
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse([]Source{src("/etc/nr/main.yaml", sideHead+`routes:
  - {to: 10.1.0.0/16, via: 10.0.0.1, dev: eth0, table: 100}
  - {to: 10.2.0.0/16, type: blackhole, table: 200}
  - {to: default, via: 10.0.0.254, metric: 100, mtu: 1400, table: 100}
  - {to: 2001:db8::/32, dev: eth1, src: 2001:db8::1, metric: 5, table: 100}
  - {to: 10.3.0.0/24, via: "fe80::1", dev: eth0, table: 100}
  - to: 10.4.0.0/24
    table: 100
    nexthops: [{via: 10.0.0.1, dev: eth0, weight: 3}, {via: 10.0.1.1, dev: eth1}]
  - {to: 10.5.0.0/24, via: 10.0.0.9, dev: eth0, onlink: true, scope: global, tos: 0x10, table: 100}
  - {to: 10.6.0.0/24, type: unreachable, table: 100}
`)})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withoutOrigins(got.State), withoutOrigins(want.State)) {
		t.Errorf("routes file gave\n%v\nYAML gives\n%v", got.State.Routes, want.State.Routes)
	}
	origins := map[string]bool{}
	for _, r := range got.State.Routes {
		origins[r.Origin.String()] = true
	}
	for _, o := range []string{"/etc/nr/up.routes:3:1", "/etc/nr/up.routes:4:2", "/etc/nr/up.routes:10:1"} {
		if !origins[o] {
			t.Errorf("no route from %s among %v", o, origins)
		}
	}
	if len(got.Sides) != 1 || got.Sides[0].Name != "/etc/nr/up.routes" || string(got.Sides[0].Data) != lines || !got.Sides[0].Side {
		t.Errorf("Sides %v, want the routes file as given", got.Sides)
	}
}

// Errors in a side file are positioned like the YAML's: file:line:col (the
// column of the word, in characters), the path of the key that names the
// file and the word's field, and what was expected.
func TestSideFileErrors(t *testing.T) {
	yaml := sideHead + "routes:\n  - {to: 10.9.0.0/24, dev: eth0}\nroutes-files: [r.txt]\n" +
		"nftables:\n  inet f:\n    sets:\n      s: {type: ipv4_addr, flags: [interval], elements: [10.8.0.0/24], elements-file: e.txt}\n"
	for _, c := range []struct{ routes, elems, want string }{
		{"10.1.0.0/24 dve eth0\n", "", `r.txt:1:13: routes-files[0].dve: unknown word "dve"; expected one of: via, dev, src, table, metric, scope, mtu, tos, onlink, nexthop`},
		{"10.1.0.0/24 dev\n", "", "r.txt:1:13: routes-files[0].dev: expected a value after dev"},
		{"# x\n10.1.0.1/24 dev eth0\n", "", `r.txt:2:1: routes-files[0].to: "10.1.0.1/24" has host bits set; the prefix is 10.1.0.0/24`},
		{"  2001:db8:5::/48 via 10.0.0.1 dev eth0\n", "", "r.txt:1:23: routes-files[0].via: gateway 10.0.0.1 is not of the destination's family (IPv6)"},
		{"10.1.0.0/24 dev eth7\n", "", `r.txt:1:17: routes-files[0].dev: link "eth7" is not declared; declare it (kind device for an existing NIC)`},
		{"10.9.0.0/24 dev eth1\n", "", "r.txt:1:1: routes-files[0]: route 10.9.0.0/24 table main is declared twice (first at f.yaml:6:5)"},
		{"10.1.0.0/24 dev eth0 metric 1 preference 2\n", "", "r.txt:1:31: routes-files[0].metric: metric given twice"},
		{"10.1.0.0/24 dev eth0 metric x\n", "", `r.txt:1:29: routes-files[0].metric: expected an integer, found "x"`},
		{"10.1.0.0/24 weight 2\n", "", "r.txt:1:13: routes-files[0].weight: weight belongs to a next hop: write it after nexthop"},
		{"10.1.0.0/24 nexthop via 10.0.0.1 metric 2\n", "", `r.txt:1:34: routes-files[0].nexthops[0].metric: after nexthop, expected via, dev, weight or another nexthop, found "metric"`},
		{"blackhole\n", "", "r.txt:1:1: routes-files[0]: expected a destination prefix after the route type, like blackhole 10.0.0.0/8"},
		{"ü10.1.0.0/24 dev eth0\n", "", `r.txt:1:1: routes-files[0].to: expected a CIDR prefix like 10.0.0.0/24 or fd00::/64 (or "default"), found "ü10.1.0.0/24"`},
		{"10.1.0.0/24 dev ü0 metric x\n", "", `r.txt:1:27: routes-files[0].metric: expected an integer, found "x"`},
		{"10.1.0.0/24 dev eth0 # ü\n10.2.0.0/24 tos 5 dev eth0\n", "", "r.txt:2:17: routes-files[0].tos: expected a DS field without ECN bits (a multiple of 4, 0 to 252, like 0x10), found 5"},
		{"", "10.0.0.1\n\n  x # bad\n", `e.txt:3:3: nftables.inet f.sets.s.elements-file: expected an address, a prefix or a range a-b, found "x"`},
		{"", "10.0.0.1\n10.8.0.0/24\n", "e.txt:2:1: nftables.inet f.sets.s.elements-file: element given twice (also elements[0])"},
		{"", "10.0.0.1\n10.0.0.1\n", "e.txt:2:1: nftables.inet f.sets.s.elements-file: element given twice (also at e.txt:1:1)"},
		{"", "10.8.0.128/25\n", "f.yaml:11:57: nftables.inet f.sets.s.elements: 10.8.0.128/25 overlaps 10.8.0.0/24; the kernel refuses overlapping intervals: merge them"},
	} {
		got := errorsOf(t, src("f.yaml", yaml), side("r.txt", c.routes), side("e.txt", c.elems))
		if !strings.Contains(got, c.want) {
			t.Errorf("routes %q, elements %q: errors\n%s\nwant among them\n%s", c.routes, c.elems, got, c.want)
		}
	}
}

// Side files are read relative to the file that names them, and held like
// the configuration: a file others can write, a directory, a file too big
// or missing are errors at the key that names them; --allow-insecure-config
// reads the first.
func TestSideFileReading(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, content string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	main := filepath.Join(dir, "main.yaml")
	write("main.yaml", sideHead, 0o644)
	write("conf.d/10-up.yaml", "version: 1\nroutes-files: [../tables/up.routes]\n", 0o644)
	write("tables/up.routes", "10.1.0.0/24 dev eth0\n", 0o644)
	write("conf.d/20-sets.yaml", "version: 1\nnftables:\n  inet f:\n    sets:\n      s: {type: ipv4_addr, elements-file: "+filepath.Join(dir, "block.txt")+"}\n", 0o644)
	write("block.txt", "192.0.2.1\n", 0o644)
	var named []string
	cfg, err := LoadWith(main, DropInDir(main), Options{Named: func(s Source, err error) { named = append(named, s.Name) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.State.Routes) != 1 || len(cfg.State.NFTables) != 1 || len(cfg.State.NFTables[0].Sets[0].Elems) != 1 {
		t.Fatalf("routes %v, tables %v", cfg.State.Routes, cfg.State.NFTables)
	}
	wantNamed := []string{filepath.Join(dir, "tables/up.routes"), filepath.Join(dir, "block.txt")}
	if !slices.Equal(named, wantNamed) {
		t.Errorf("named %v, want %v", named, wantNamed)
	}
	load := func(opts Options) string {
		t.Helper()
		_, err := LoadWith(main, DropInDir(main), opts)
		if err == nil {
			return ""
		}
		return err.Error()
	}
	routesAt := filepath.Join(dir, "conf.d/10-up.yaml") + ":2:16: routes-files[0].file: "
	for _, c := range []struct {
		setup func()
		want  string
	}{
		{func() { write("tables/up.routes", "10.1.0.0/24 dev eth0\n", 0o666) }, routesAt + "cannot read the side file: insecure configuration: side file " + filepath.Join(dir, "tables/up.routes") + " is writable by group or others (mode 0666)"},
		{func() { os.Remove(filepath.Join(dir, "tables/up.routes")) }, routesAt + "cannot read the side file " + filepath.Join(dir, "tables/up.routes") + ": no such file or directory"},
		{func() {
			os.Remove(filepath.Join(dir, "tables/up.routes"))
			os.Mkdir(filepath.Join(dir, "tables/up.routes"), 0o755)
		}, routesAt + "cannot read the side file: " + filepath.Join(dir, "tables/up.routes") + " is not a regular file (d---------)"},
		{func() {
			os.Remove(filepath.Join(dir, "tables/up.routes"))
			write("tables/big", strings.Repeat("#\n", MaxSideBytes/2+1), 0o644)
			os.Symlink("big", filepath.Join(dir, "tables/up.routes"))
		}, routesAt + "cannot read the side file: larger than the 67108864 bytes left of the 64 MiB that the side files of a configuration may hold together"},
	} {
		c.setup()
		if got := load(Options{}); !strings.Contains(got, c.want) {
			t.Errorf("errors\n%s\nwant\n%s", got, c.want)
		}
		os.RemoveAll(filepath.Join(dir, "tables"))
		write("tables/up.routes", "10.1.0.0/24 dev eth0\n", 0o644)
	}
	write("tables/up.routes", "10.1.0.0/24 dev eth0\n", 0o666)
	if got := load(Options{AllowInsecure: true}); got != "" {
		t.Errorf("with AllowInsecure: %s", got)
	}
	// A side file given (a snapshot's) is used, not the disk's; one the
	// configuration no longer names is ignored.
	srcs, err := ReadSources(main, DropInDir(main))
	if err != nil {
		t.Fatal(err)
	}
	srcs = append(srcs, side(filepath.Join(dir, "tables/up.routes"), "10.7.0.0/24 dev eth1\n"), side(filepath.Join(dir, "gone.txt"), "x"))
	cfg, err = ParseWith(srcs, Options{AllowInsecure: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.State.Routes) != 1 || cfg.State.Routes[0].Dst.String() != "10.7.0.0/24" || len(cfg.Sides) != 2 {
		t.Errorf("routes %v, sides %d: want the given routes file's", cfg.State.Routes, len(cfg.Sides))
	}
	// Named is told of files that cannot be read, also when the
	// configuration is invalid.
	os.Remove(filepath.Join(dir, "block.txt"))
	named = nil
	var failed []string
	_, err = LoadWith(main, DropInDir(main), Options{AllowInsecure: true, Named: func(s Source, err error) {
		named = append(named, s.Name)
		if err != nil {
			failed = append(failed, s.Name)
		}
	}})
	if err == nil || !slices.Equal(named, wantNamed) || !slices.Equal(failed, wantNamed[1:]) {
		t.Errorf("error %v, named %v, failed %v", err, named, failed)
	}
}

// Generated routes, each written in YAML and as a line, give the same
// routes, or the same errors (messages; the positions and paths differ by
// nature). YAML is the oracle: its decoder and the line parser share only
// the value parsers.
func TestRoutesFileAgreesWithYAML(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 33))
	pick := func(xs ...string) string { return xs[rnd.IntN(len(xs))] }
	for round := range 300 {
		var y, l strings.Builder
		y.WriteString(sideHead + "routes:\n")
		for i := range 1 + rnd.IntN(6) {
			dst := pick(fmt.Sprintf("10.%d.0.0/16", i), fmt.Sprintf("2001:db8:%x::/48", i), "default", "10.0.0.1/8", "x")
			var ym, lw []string
			if rnd.IntN(4) == 0 {
				typ := pick("blackhole", "unreachable", "local", "unicast", "throw")
				ym = append(ym, "type: "+typ)
				lw = append(lw, typ)
			}
			ym = append(ym, "to: "+quote(dst))
			lw = append(lw, dst)
			for _, k := range rnd.Perm(9)[:rnd.IntN(5)] {
				var v string
				switch k {
				case 0, 1:
					k, v = 0, pick("10.0.0.1", "fe80::1", "2001:db8::9", "300.1.1.1")
				case 2:
					v = pick("eth0", "eth1", "eth9")
				case 3:
					v = pick("10.0.0.5", "2001:db8::5", "x")
				case 4:
					v = pick("100", "main", "0", "local")
				case 5:
					v = pick("10", "0x20", "-1", "4294967296", "y")
				case 6:
					v = pick("link", "global", "host", "nope")
				case 7:
					v = pick("1400", "60", "z")
				case 8:
					v = pick("0", "4", "0x10", "3", "256")
				}
				yk := []string{"via", "via", "dev", "src", "table", "metric", "scope", "mtu", "tos"}[k]
				if slices.ContainsFunc(ym, func(s string) bool { return strings.HasPrefix(s, yk+":") }) {
					continue
				}
				ym = append(ym, yk+": "+quote(v))
				lw = append(lw, yk, v)
			}
			if rnd.IntN(6) == 0 {
				ym = append(ym, "onlink: true")
				lw = append(lw, "onlink")
			}
			if rnd.IntN(6) == 0 {
				var hops []string
				for range 1 + rnd.IntN(3) {
					via, dev := pick("10.0.0.1", "10.0.0.2", "fe80::1"), pick("eth0", "eth1")
					hop := "via: " + quote(via) + ", dev: " + dev
					lw = append(lw, "nexthop", "via", via, "dev", dev)
					if rnd.IntN(3) == 0 {
						w := pick("1", "3", "0", "300", "w")
						hop += ", weight: " + quote(w)
						lw = append(lw, "weight", w)
					}
					hops = append(hops, "{"+hop+"}")
				}
				ym = append(ym, "nexthops: ["+strings.Join(hops, ", ")+"]")
			}
			fmt.Fprintf(&y, "  - {%s}\n", strings.Join(ym, ", "))
			fmt.Fprintf(&l, "%s\n", strings.Join(lw, " "))
		}
		want, wantErr := Parse([]Source{src("f.yaml", y.String())})
		got, gotErr := Parse([]Source{src("f.yaml", sideHead+"routes-files: [r.txt]\n"), side("r.txt", l.String())})
		if wm, gm := errorMessages(wantErr), errorMessages(gotErr); !slices.Equal(wm, gm) {
			t.Fatalf("round %d:\nYAML:\n%s\nerrors %q\nlines:\n%s\nerrors %q", round, y.String(), wm, l.String(), gm)
		}
		if wantErr == nil && !reflect.DeepEqual(withoutOrigins(got.State), withoutOrigins(want.State)) {
			t.Fatalf("round %d:\nYAML:\n%s\nroutes %v\nlines:\n%s\nroutes %v", round, y.String(), want.State.Routes, l.String(), got.State.Routes)
		}
	}
}

var firstAt = regexp.MustCompile(`first at [^)]*`)

func quote(s string) string { return `"` + s + `"` }

func errorMessages(err error) []string {
	var es Errors
	if !errors.As(err, &es) {
		return nil
	}
	var out []string
	for _, e := range es {
		// The place of a first declaration is a position.
		out = append(out, firstAt.ReplaceAllString(e.Msg, "first at …"))
	}
	slices.Sort(out)
	return out
}

// An elements file gives the set the elements of its lines, beside the
// YAML's, as YAML would.
func TestElementsFile(t *testing.T) {
	set := "version: 1\nnftables:\n  inet f:\n    sets:\n      s:\n        type: ipv4_addr\n        flags: [interval]\n"
	got, err := Parse([]Source{
		src("f.yaml", set+"        elements: [10.0.0.0/8]\n        elements-file: block.txt\n"),
		side("block.txt", "# feed of 2026-11-29\n192.0.2.0/24\n\t198.51.100.7 # one host\r\n\n203.0.113.1-203.0.113.9\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	want, err := Parse([]Source{src("f.yaml", set+"        elements: [10.0.0.0/8, 192.0.2.0/24, 198.51.100.7, 203.0.113.1-203.0.113.9]\n")})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(withoutOrigins(got.State), withoutOrigins(want.State)) {
		t.Errorf("elements file gave %v, YAML gives %v", got.State.NFTables, want.State.NFTables)
	}
}

// FuzzSideFiles feeds the side-file parsers (make fuzz): the input before
// its first NUL is a routes file, the rest a set's elements file. Nothing
// panics, every error is at a line of its file and a column from 1, a
// second parse gives the same, and a file accepted gives a route or an
// element for each line that holds one (a line is one item, and a
// duplicate is an error).
func FuzzSideFiles(f *testing.F) {
	for _, s := range []string{
		"10.1.0.0/16 via 10.0.0.1 dev eth0\nblackhole 10.2.0.0/16 table 200 # x\n\x00192.0.2.0/24\n198.51.100.7\n",
		"default via inet6 fe80::1 dev eth0 metric 5 mtu 1400\n2001:db8::/32 nexthop via fe80::1 dev eth0 weight 2 nexthop dev eth1\n\x0010.0.0.1-10.0.0.9\r\n",
		"\ufeff# only comments\n\n\t\x00\n#\n",
		"10.1.0.0/24 dev eth0 onlink via 10.0.0.1 tos 0x10 scope link src 10.0.0.2 preference 1\x00x\n10.0.0.1/33\n",
	} {
		f.Add([]byte(s))
	}
	yaml := sideHead + "routes-files: [{file: r.txt, table: 100}]\n" +
		"nftables:\n  inet f:\n    sets:\n      s: {type: ipv4_addr, flags: [interval], elements-file: e.txt}\n"
	f.Fuzz(func(t *testing.T, data []byte) {
		routes, elems, _ := strings.Cut(string(data), "\x00")
		srcs := []Source{src("f.yaml", yaml), side("r.txt", routes), side("e.txt", elems)}
		cfg, err := Parse(srcs)
		again, againErr := Parse(srcs)
		if !reflect.DeepEqual(err, againErr) || !reflect.DeepEqual(cfg, again) {
			t.Fatalf("%q: a second parse differs: %v / %v", data, err, againErr)
		}
		lines := map[string]int{"r.txt": strings.Count(routes, "\n") + 1, "e.txt": strings.Count(elems, "\n") + 1}
		var es Errors
		if err != nil && !errors.As(err, &es) {
			t.Fatalf("%q: error %v is not Errors", data, err)
		}
		for _, e := range es {
			if n, side := lines[e.Pos.File]; e.Pos.Col < 1 || e.Pos.Line < 1 || side && e.Pos.Line > n || !side && e.Pos.File != "f.yaml" {
				t.Fatalf("%q: error out of place: %s", data, e)
			}
		}
		if err != nil {
			return
		}
		count := func(text string) int {
			n := 0
			eachLine(text, func(int, string) { n++ })
			return n
		}
		if got, want := len(cfg.State.Routes), count(routes); got != want {
			t.Fatalf("%q: %d routes from %d lines", data, got, want)
		}
		if got, want := len(cfg.State.NFTables[0].Sets[0].Elems), count(elems); got != want {
			t.Fatalf("%q: %d elements from %d lines", data, got, want)
		}
	})
}

// A map nft declares takes an elements file too: each line one element in
// nft's words, as the YAML list would give it.
func TestElementsFileOfDeclaredMap(t *testing.T) {
	m := "version: 1\nnftables:\n  inet f:\n    maps:\n      m:\n        type: \"inet_service : verdict\"\n"
	got, err := Parse([]Source{
		src("f.yaml", m+"        elements: [\"22 : accept\"]\n        elements-file: m.txt\n"),
		side("m.txt", "# ports\n80 : drop\n\t443 : accept\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	s := got.State.NFTables[0].Set("m")
	if s == nil || !reflect.DeepEqual(s.ElemTexts, []string{"22 : accept", "80 : drop", "443 : accept"}) {
		t.Fatalf("map from an elements file: %+v", s)
	}
	if src := s.ElemSources[2]; src.At(0) != "m.txt:3:2" || src.Path() != "nftables.inet f.maps.m.elements-file[1]" {
		t.Errorf("the file's second element is said to be at %s (%s)", src.At(0), src.Path())
	}
}
