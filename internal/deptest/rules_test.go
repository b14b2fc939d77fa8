package deptest

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestCheckFloorsSynthetic: the checker on small graphs, one breach each.
func TestCheckFloorsSynthetic(t *testing.T) {
	floor := map[string]int{"a": 1, "b": 1, "c": 2, "d": 3}
	side := map[Edge]bool{{"a", "b"}: true}
	base := Graph{"a": {"b"}, "b": {}, "c": {"a"}, "d": {"b", "c"}}
	for _, c := range []struct {
		name string
		edit func(g Graph)
		want []string
	}{
		{"clean", func(Graph) {}, nil},
		{"upward", func(g Graph) { g["c"] = []string{"a", "d"} }, []string{"c (floor 2) imports d (floor 3): an upward import"}},
		{"same floor", func(g Graph) { g["b"] = []string{"a"} }, []string{"b (floor 1) imports a (floor 1): a same-floor import the table does not allow"}},
		{"no floor", func(g Graph) { g["e"] = []string{"a"} }, []string{"e: no floor in the table (place it in docs/architecture.md §0 and in the test's floor table)"}},
		{"stale row", func(g Graph) { delete(g, "d") }, []string{"d: on floor 3 in the table, but there is no such package"}},
		{"stale sideways", func(g Graph) { g["a"] = nil }, []string{"a → b: allowed as a same-floor import, but it is not one (floors 1 and 1, imported: false)"}},
	} {
		g := Graph{}
		for k, v := range base {
			g[k] = slices.Clone(v)
		}
		c.edit(g)
		if got := CheckFloors(g, floor, side); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

// TestCheckNeversSynthetic: a forbidden dependency is found through other
// packages (the chain named), a known one is excused, and a known one that
// no longer happens is stale.
func TestCheckNeversSynthetic(t *testing.T) {
	g := Graph{"eval": {"gen"}, "gen": {"train"}, "train": {"model"}, "model": {}, "data/x": {"data/y"}, "data/y": {"log"}, "log": {}}
	rules := []Never{{"eval", "train"}, {"data/...", "log"}, {"model", "data/..."}}
	v, e, s := CheckNevers(g, rules, nil)
	want := []string{
		"data/x must never depend on log (rule data/... ↛ log): data/x → data/y → log",
		"data/y must never depend on log (rule data/... ↛ log): data/y → log",
		"eval must never depend on train (rule eval ↛ train): eval → gen → train",
	}
	if !slices.Equal(v, want) || e != nil || s != nil {
		t.Errorf("no exceptions: violations %q, excused %q, stale %q; want %q", v, e, s, want)
	}
	known := map[Edge]string{{"eval", "train"}: "TODO", {"model", "data/x"}: "gone"}
	v, e, s = CheckNevers(g, rules, known)
	if len(v) != 2 || !slices.Equal(e, []string{"TODO: eval → gen → train"}) ||
		!slices.Equal(s, []string{"model → data/x no longer happens (gone): remove it from the known exceptions"}) {
		t.Errorf("with exceptions: violations %q, excused %q, stale %q", v, e, s)
	}
}

// TestMatch: a "/..." pattern names a tree, anything else one package.
func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat, pkg string
		want     bool
	}{
		{"internal/data/...", "internal/data", true},
		{"internal/data/...", "internal/data/loader/shufflereport", true},
		{"internal/data/...", "internal/datadir", false},
		{"internal/train", "internal/train", true},
		{"internal/train", "internal/trainer", false},
	} {
		if got := Match(c.pat, c.pkg); got != c.want {
			t.Errorf("Match(%q, %q) = %t", c.pat, c.pkg, got)
		}
	}
}

// TestLoad: imports of the module are read from non-test files; test
// files, ignored generators, testdata, hidden directories and nested
// modules are left out; a file that does not parse is named.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":              "module example.com/m\n",
		"a/a.go":              "package a\nimport (\n\t\"fmt\"\n\t\"example.com/m/b\"\n\t_ \"example.com/m/b\"\n)\nvar _ = fmt.Sprint\n",
		"a/a_test.go":         "package a\nimport _ \"example.com/m/c\"\n",
		"a/gen.go":            "//go:build ignore\n\npackage main\nimport _ \"example.com/m/c\"\n",
		"a/unix.go":           "//go:build unix\n\npackage a\nimport _ \"example.com/m/d\"\n",
		"b/b.go":              "package b\n",
		"c/c.go":              "package c\nimport _ \"example.com/m\"\n",
		"d/d.go":              "package d\n",
		"root.go":             "package m\n",
		"b/testdata/x/x.go":   "package x\nimport _ \"example.com/m/c\"\n",
		".hidden/h.go":        "package h\n",
		"nested/go.mod":       "module example.com/n\n",
		"nested/n.go":         "package n\n",
		"onlytests/o_test.go": "package o\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, module, err := ModuleRoot(filepath.Join(dir, "a"))
	if err != nil || root != dir || module != "example.com/m" {
		t.Fatalf("ModuleRoot: %q %q %v", root, module, err)
	}
	g, err := Load(root, module)
	if err != nil {
		t.Fatal(err)
	}
	want := Graph{"a": {"b", "d"}, "b": {}, "c": {"."}, "d": {}, ".": {}}
	if len(g) != len(want) {
		t.Errorf("packages %v, want %v", g, want)
	}
	for pkg, imps := range want {
		if !slices.Equal(g[pkg], imps) {
			t.Errorf("%s imports %q, want %q", pkg, g[pkg], imps)
		}
	}
	bad := filepath.Join(dir, "b", "bad.go")
	if err := os.WriteFile(bad, []byte("package b\nimport \"x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(root, module); err == nil || !strings.Contains(err.Error(), bad+":2:") {
		t.Errorf("a file that does not parse: %v; want an error naming %s:2", err, bad)
	}
}

// TestUsesFindsRenamedImport: Uses finds a reference through a renamed
// import, skips test files and names file and line.
func TestUsesFindsRenamedImport(t *testing.T) {
	root := t.TempDir()
	write := func(rel, body string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.com/m\n")
	write("a/a.go", "package a\n\nimport dd \"example.com/m/dir\"\n\nvar _, _ = dd.Expand(\"x\")\nvar _ = dd.Root\n")
	write("a/a_test.go", "package a\n\nimport \"example.com/m/dir\"\n\nvar _, _ = dir.Expand(\"x\")\n")
	write("b/b.go", "package b\n\nfunc Expand(string) {}\n\nfunc f() { Expand(\"x\") }\n")
	got, err := Uses(root, "example.com/m", "dir", []string{"Expand"})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string][]string{"a": {"a.go:5 dd.Expand"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Uses = %v, want %v", got, want)
	}
}
