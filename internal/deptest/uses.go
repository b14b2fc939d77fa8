package deptest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Uses finds, in the non-test Go files of the module rooted at root, every
// reference to one of names exported by the package imp (an import path
// relative to the module, e.g. "internal/datadir"), whatever the file
// names its import. It returns package → "file:line name", sorted; the
// directories Load skips are skipped.
func Uses(root, module, imp string, names []string) (map[string][]string, error) {
	out := map[string][]string{}
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
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		local := ""
		for _, is := range f.Imports {
			if p, _ := strconv.Unquote(is.Path.Value); p == module+"/"+imp {
				local = filepath.Base(imp)
				if is.Name != nil {
					local = is.Name.Name
				}
			}
		}
		if local == "" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		pkg := filepath.ToSlash(rel)
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if id, ok := sel.X.(*ast.Ident); ok && id.Name == local && slices.Contains(names, sel.Sel.Name) {
				pos := fset.Position(sel.Pos())
				out[pkg] = append(out[pkg], fmt.Sprintf("%s:%d %s.%s", filepath.Base(pos.Filename), pos.Line, local, sel.Sel.Name))
			}
			return true
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the uses of %s under %s: %w", imp, root, err)
	}
	for _, u := range out {
		slices.Sort(u)
	}
	return out, nil
}
