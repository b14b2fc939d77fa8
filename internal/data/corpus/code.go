package corpus

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kestrel-lm/kestrel/internal/data/document"
)

// readCode walks a directory (or reads one file) of source code: one
// document per file, in lexical path order, filtered by include/exclude
// globs, MaxFileBytes, and skipping binary files (a NUL byte in the first
// 8 KiB). Pos is 0; the id carries the relative path.
func (r *reader) readCode(in Input) error {
	root := in.Path
	st, err := os.Stat(root)
	if err != nil {
		return fmt.Errorf("input %s: %w", root, err)
	}
	if !st.IsDir() {
		return r.codeFile(in, root, st.Size())
	}
	return filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			if e := r.problem(Problem{File: path, Unit: "file", Kind: "unreadable", Detail: err.Error()}); e != nil {
				return e
			}
			if de != nil && de.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if de.IsDir() {
			if path != root && matchAny(r.opts.Exclude, rel, de.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if !de.Type().IsRegular() {
			return nil
		}
		if len(r.opts.Include) > 0 && !matchAny(r.opts.Include, rel, de.Name()) {
			return nil
		}
		if matchAny(r.opts.Exclude, rel, de.Name()) {
			return nil
		}
		info, err := de.Info()
		if err != nil {
			return r.problem(Problem{File: path, Unit: "file", Kind: "unreadable", Detail: err.Error()})
		}
		return r.codeFile(Input{Path: path, Root: root}, path, info.Size())
	})
}

func (r *reader) codeFile(in Input, path string, size int64) error {
	if size > r.opts.MaxFileBytes {
		r.skip(path, "file_too_large")
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return r.problem(Problem{File: path, Unit: "file", Kind: "unreadable", Detail: err.Error()})
	}
	if bytes.IndexByte(b[:min(len(b), 8192)], 0) >= 0 {
		r.skip(path, "binary_file")
		return nil
	}
	rel := relName(in, path)
	d := document.Doc{ID: r.opts.Source + ":" + rel, Source: r.opts.Source, Text: string(b), Meta: map[string]any{"path": rel}, File: path}
	return r.emit(d, "file")
}

// matchAny reports whether a glob matches the relative path or the base name.
func matchAny(globs []string, rel, base string) bool {
	for _, g := range globs {
		if ok, _ := filepath.Match(g, rel); ok {
			return true
		}
		if ok, _ := filepath.Match(g, base); ok {
			return true
		}
	}
	return false
}
