package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// rename is os.Rename; tests replace it to fail at a chosen step.
var rename = os.Rename

// Dir is a directory being written under a temporary name beside the place
// it will be installed: fill it through Path, then Install it, or Abort.
// A reader (or a crash) sees the old directory or the new one whole, never a
// half-written one.
type Dir struct {
	tmp  string
	done bool
}

// TempDirName reports whether name (a base name) is one of the temporary
// names NewDir and Install use, so a caller can remove those left behind by
// a crash in a directory only it writes.
func TempDirName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// NewDir creates an empty directory (mode 0755) in parent, named after
// base with a random suffix ("."+base+".tmp-…"); parent is created if
// needed. base is the name the directory is meant to get, used only to
// name the temporary one.
func NewDir(parent, base string) (*Dir, error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Join(parent, base), err)
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", filepath.Join(parent, base), err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("create %s: %w", filepath.Join(parent, base), err)
	}
	return &Dir{tmp: tmp}, nil
}

// Path is the temporary directory to write into.
func (d *Dir) Path() string { return d.tmp }

// Abort removes the temporary directory unless it was installed. It is
// safe to defer right after NewDir and to call more than once.
func (d *Dir) Abort() {
	if !d.done {
		os.RemoveAll(d.tmp)
		d.done = true
	}
}

// Install makes the temporary directory final: every file and directory in
// it is fsynced, an existing final is moved aside, the temporary directory
// is renamed to final, the parent directory is fsynced and the old final is
// removed. final must be in the same parent as the temporary directory. On
// any failure the temporary directory is removed and the old final is
// where it was (if putting it back fails too, the error says where it is).
// Errors name final.
func (d *Dir) Install(final string) error {
	if d.done {
		return fmt.Errorf("install %s: already installed or aborted", final)
	}
	fail := func(step string, err error) error {
		d.Abort()
		return fmt.Errorf("install %s: %s: %w", final, step, err)
	}
	if filepath.Dir(filepath.Clean(final)) != filepath.Dir(d.tmp) {
		return fail("check", fmt.Errorf("not in the directory of %s", d.tmp))
	}
	if err := syncTree(d.tmp); err != nil {
		return fail("sync", err)
	}
	old := ""
	if _, err := os.Lstat(final); err == nil {
		old = d.tmp + ".old"
		if err := rename(final, old); err != nil {
			return fail("move old aside", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail("stat", err)
	}
	if err := rename(d.tmp, final); err != nil {
		err = fail("rename", err)
		if old != "" {
			if rerr := rename(old, final); rerr != nil {
				return fmt.Errorf("%w; the old %s could not be put back and is at %s: %v", err, final, old, rerr)
			}
		}
		return err
	}
	d.done = true
	if err := syncDir(filepath.Dir(d.tmp)); err != nil {
		return fmt.Errorf("install %s: %w", final, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("install %s: remove the old one: %w", final, err)
		}
	}
	return nil
}

// WriteDir writes the directory final atomically: fill writes its contents
// into the temporary directory it is given, then the directory is
// installed as by Dir.Install. If fill fails, nothing is installed, the
// temporary directory is removed and fill's error is returned as is.
func WriteDir(final string, fill func(dir string) error) error {
	final = filepath.Clean(final)
	d, err := NewDir(filepath.Dir(final), filepath.Base(final))
	if err != nil {
		return err
	}
	defer d.Abort()
	if err := fill(d.Path()); err != nil {
		return err
	}
	return d.Install(final)
}

// syncTree fsyncs every regular file and directory under root, the
// directories after their contents.
func syncTree(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case e.IsDir():
			dirs = append(dirs, p)
		case e.Type().IsRegular():
			return syncFile(p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := syncDir(dirs[i]); err != nil {
			return err
		}
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync %s: %w", path, err)
	}
	return nil
}

// syncDir fsyncs a directory so the names in it (a rename) are durable.
// File systems that cannot sync a directory (os.ErrInvalid) are tolerated.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
