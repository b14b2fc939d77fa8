package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandStaysThin: cmd/kestrel is flags in, library calls out — each
// file under 180 non-test lines, all of them under 1,600, with no exported
// names (library logic belongs in the packages, see docs/architecture.md §0;
// long help texts are prose in help/*.txt).
func TestCommandStaysThin(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := 0
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		n := strings.Count(string(b), "\n")
		if n >= 180 {
			t.Errorf("%s has %d lines; a command file is flags and library calls, keep it under 180", f, n)
		}
		lines += n
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
	// to 1,600, kestrel branch and kestrel compare to 1,700.
	if lines >= 1700 {
		t.Errorf("cmd/kestrel has %d non-test lines; keep it under 1,700 by moving logic into the packages", lines)
	}
}
