package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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
	lock *os.File // flock on tmp while it is being written (unix), so RemoveStaleTemps leaves it alone
}

// TempDirName reports whether name (a base name) is one of the temporary
// names NewDir and Install use, so a caller can remove those left behind by
// a crash in a directory only it writes.
func TempDirName(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp-")
}

// Leftovers is what RemoveStaleTemps found beside a directory.
type Leftovers struct {
	Removed  []string // stale temporary directories removed
	Restored string   // the previous directory put back in place ("" if none)
	InUse    []string // temporary directories of a live writer, left alone
}

// RemoveStaleTemps removes the temporary directories NewDir made in parent
// for base (".base.tmp-N", and ".base.tmp-N.old", the previous directory
// moved aside by Install) that a killed writer left behind. Nothing else
// is touched: only names of exactly that form for this base. A temporary
// directory a live Dir is still writing (in this process or another) is
// left alone (on unix NewDir holds an flock on it until Install or Abort;
// elsewhere liveness cannot be told, so call it only where one writer at a
// time is expected). An ".old" directory whose final directory is missing
// (the writer died between moving it aside and installing the new one) is
// renamed back to final rather than removed, so nothing installed is lost.
func RemoveStaleTemps(parent, base string) (Leftovers, error) {
	var lo Leftovers
	ents, err := os.ReadDir(parent)
	if errors.Is(err, fs.ErrNotExist) {
		return lo, nil
	}
	if err != nil {
		return lo, fmt.Errorf("clean up beside %s: %w", filepath.Join(parent, base), err)
	}
	final := filepath.Join(parent, base)
	var olds []string
	for _, e := range ents {
		old, ok := tempOf(e.Name(), base)
		if !ok || !e.IsDir() {
			continue
		}
		p := filepath.Join(parent, e.Name())
		if old {
			olds = append(olds, p) // after the temporaries: its own may be live
			continue
		}
		if dirInUse(p) {
			lo.InUse = append(lo.InUse, p)
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			return lo, fmt.Errorf("clean up beside %s: %w", final, err)
		}
		lo.Removed = append(lo.Removed, p)
	}
	for _, p := range olds {
		tmp := strings.TrimSuffix(p, ".old")
		if slices.Contains(lo.InUse, tmp) {
			lo.InUse = append(lo.InUse, p) // its writer is between the two renames of Install
			continue
		}
		if _, err := os.Lstat(final); errors.Is(err, fs.ErrNotExist) && lo.Restored == "" {
			if err := os.Rename(p, final); err != nil {
				return lo, fmt.Errorf("clean up beside %s: put back %s: %w", final, p, err)
			}
			lo.Restored = p
			continue
		} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return lo, fmt.Errorf("clean up beside %s: %w", final, err)
		}
		if err := os.RemoveAll(p); err != nil {
			return lo, fmt.Errorf("clean up beside %s: %w", final, err)
		}
		lo.Removed = append(lo.Removed, p)
	}
	return lo, nil
}

// tempOf reports whether name is one of NewDir's temporary names for base:
// "."+base+".tmp-"+digits (os.MkdirTemp's random part), or that followed
// by ".old" (old is then true).
func tempOf(name, base string) (old, ok bool) {
	rest, ok := strings.CutPrefix(name, "."+base+".tmp-")
	if !ok {
		return false, false
	}
	digits, old := strings.CutSuffix(rest, ".old")
	if digits == "" {
		return false, false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false, false
		}
	}
	return old, true
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
	// Best effort: a file system without flock (some network ones) still
	// gets its directory; RemoveStaleTemps cannot tell it is live there.
	lock, _ := lockDir(tmp)
	return &Dir{tmp: tmp, lock: lock}, nil
}

// unlock releases the lock on the temporary directory.
func (d *Dir) unlock() {
	if d.lock != nil {
		d.lock.Close()
		d.lock = nil
	}
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
	d.unlock()
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
	d.unlock()
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
