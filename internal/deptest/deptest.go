// Package deptest holds the project's import rules to the code: it reads
// the module's import graph from source (go/parser, imports only; no call
// to the go tool) and checks it against a floor table (a package imports
// only packages on lower floors, and on its own floor only the imports
// the table allows) and a list of dependencies that must never exist,
// directly or through other packages. The table itself is data in this
// package's test, kept true to docs/architecture.md §0.
package deptest

import (
	"errors"
	"fmt"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Graph maps each package of the module (its path relative to the module
// root, "." for the root) to the module's packages it imports directly
// from its non-test files, sorted.
type Graph map[string][]string

// Edge is one dependency, From importing To.
type Edge struct{ From, To string }

// Load reads the import graph of the module rooted at root whose module
// path is module. Test files, files constrained by `//go:build ignore`,
// and the directories Go skips (testdata, vendor, names starting with "."
// or "_", nested modules) and node_modules are left out. A file that does
// not parse is an error naming it.
func Load(root, module string) (Graph, error) {
	g := Graph{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return skipDir(root, path, d.Name())
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		imports, keep, err := fileImports(path, module)
		if err != nil || !keep {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		pkg := filepath.ToSlash(rel)
		for _, imp := range imports {
			if !slices.Contains(g[pkg], imp) {
				g[pkg] = append(g[pkg], imp)
			}
		}
		if g[pkg] == nil {
			g[pkg] = []string{}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the import graph under %s: %w", root, err)
	}
	for _, imps := range g {
		slices.Sort(imps)
	}
	return g, nil
}

// skipDir tells WalkDir to skip the directories the go tool does not
// build (and node_modules, which holds no Go package of ours).
func skipDir(root, path, name string) error {
	if path == root {
		return nil
	}
	if name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return filepath.SkipDir
	}
	if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
		return filepath.SkipDir
	}
	return nil
}

// fileImports returns the module-internal imports of one Go file, as paths
// relative to the module root, and whether the file counts (false for a
// file constrained by `//go:build ignore`).
func fileImports(path, module string) ([]string, bool, error) {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly|parser.ParseComments)
	if err != nil {
		return nil, false, err // the scanner's errors name the file and line
	}
	for _, cg := range f.Comments {
		if cg.Pos() > f.Package {
			break
		}
		for _, c := range cg.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				return nil, false, fmt.Errorf("%s: %w", path, err)
			}
			if expr.String() == "ignore" {
				return nil, false, nil
			}
		}
	}
	var out []string
	for _, is := range f.Imports {
		p, err := strconv.Unquote(is.Path.Value)
		if err != nil {
			return nil, false, fmt.Errorf("%s: import %s: %w", path, is.Path.Value, err)
		}
		switch {
		case p == module:
			out = append(out, ".")
		case strings.HasPrefix(p, module+"/"):
			out = append(out, strings.TrimPrefix(p, module+"/"))
		}
	}
	return out, true, nil
}

// ModuleRoot walks up from dir to the directory holding go.mod and returns
// it with the module path that go.mod declares.
func ModuleRoot(dir string) (root, module string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(b)) {
				if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return d, strings.Trim(strings.TrimSpace(rest), `"`), nil
				}
			}
			return "", "", fmt.Errorf("%s: no module line", filepath.Join(d, "go.mod"))
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		if filepath.Dir(d) == d {
			return "", "", fmt.Errorf("no go.mod above %s", dir)
		}
	}
}
