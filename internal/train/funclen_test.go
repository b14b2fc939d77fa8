package train

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function of the trainer may be (issue 37:
// each readable on one screen), from its func line to its closing brace.
const maxFuncLines = 80

// maxPackageLines is the most lines the trainer's Go files (test files
// aside) may hold together (issue 37: the trainer carved back to its
// loop). What grows it belongs below it: optimizer state in optim, the
// data's bookkeeping in datasrc or loader, checkpoint encodings in
// checkpoint.
const maxPackageLines = 3500

// TestFunctionsFitOnAScreen fails naming every function of internal/train
// (test files aside) longer than maxFuncLines lines.
func TestFunctionsFitOnAScreen(t *testing.T) {
	ents, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	n, total := 0, 0
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, long := range longFuncs(fset, f, maxFuncLines) {
			t.Errorf("%s: %s is over %d lines: split it", name, long, maxFuncLines)
		}
		total += fset.Position(f.FileEnd).Line
		n++
	}
	if n == 0 {
		t.Fatal("no Go files read")
	}
	if total > maxPackageLines {
		t.Errorf("internal/train holds %d lines of Go (test files aside), over %d: move what is not the loop into the package it belongs to", total, maxPackageLines)
	}
}

// TestLongFuncs: the measure counts from the func line to the closing
// brace, so a function of max+1 lines is named and one of max is not.
func TestLongFuncs(t *testing.T) {
	body := func(name string, lines int) string {
		return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	src := "package p\n\n" + body("fits", 10) + body("over", 11) + "type T struct{}\n\nfunc (T) " + body("m", 12)[5:]
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := longFuncs(fset, f, 10)
	want := []string{"over (11 lines)", "m (12 lines)"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("longFuncs: %q, want %q", got, want)
	}
}

// longFuncs names the functions and methods of f over max lines, with
// their length.
func longFuncs(fset *token.FileSet, f *ast.File, max int) []string {
	var out []string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
		if lines > max {
			out = append(out, fmt.Sprintf("%s (%d lines)", fd.Name.Name, lines))
		}
	}
	return out
}
