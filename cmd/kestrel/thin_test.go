package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandStaysThin: cmd/kestrel is flags in, library calls out, and
// the printing of what the libraries return (its internal packages, as
// cmd/go/internal/<cmd>: show for tables and summaries, flagx for flag
// glue) — each file under 180 non-test lines, all of them together (the
// command and its internal packages) under 3,200, and no exported names
// in package main (library logic belongs in the packages, see
// docs/architecture.md §0; long help texts are prose in help/*.txt).
func TestCommandStaysThin(t *testing.T) {
	files, err := commandFiles(".")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	fset := token.NewFileSet()
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		if n >= 180 {
			t.Errorf("%s has %d lines; a command file is flags and library calls, keep it under 180", f, n)
		}
		lines += n
		if filepath.Dir(f) != "." {
			continue // the internal packages export to the command
		}
		af, err := parser.ParseFile(fset, f, b, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Name.IsExported() {
					t.Errorf("%s: exported func %s in package main", f, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							t.Errorf("%s: exported type %s in package main", f, s.Name.Name)
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								t.Errorf("%s: exported name %s in package main", f, n.Name)
							}
						}
					}
				}
			}
		}
	}
	// 1,500 held 33 commands; kestrel drill and kestrel incidents (flags
	// and library calls, their tables written by their packages) raised it
	// to 1,600, kestrel branch and kestrel compare to 1,700. The printers
	// and flag glue that had gone down into 16 library packages came back
	// up into cmd/kestrel/internal (issue 37): 2,831 lines with them, the
	// budget that plus a small margin. The last printers below (kestrel
	// prepare's summary, bench prepare's lines, demo's summary) and the
	// command side's ${KESTREL_DATA} resolution (flagx.DataPaths) came up
	// too: 2,894 → 3,139 lines, the budget 3,200.
	if lines >= 3200 {
		t.Errorf("cmd/kestrel with its internal packages has %d non-test lines; keep it under 3,200 by moving logic into the library packages", lines)
	}
}

// commandFiles lists the non-test Go files of the command directory dir
// and of the packages below it (testdata and help texts aside).
func commandFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == "testdata" || d.Name() == "help"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go"):
			files = append(files, path)
		}
		return nil
	})
	return files, err
}
