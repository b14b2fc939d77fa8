package dashboard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxReadBytes bounds a file the server reads whole to answer a request
// (config.toml, manifest.json, data_report.json); a larger one is refused
// rather than loaded into memory.
const maxReadBytes = 16 << 20

// runRoot is a run directory as the server reads it: the one way a request
// reaches a run's files. Every name is resolved through an os.Root of the
// directory, which follows a symlink only while it stays inside the
// directory (relative links only) and refuses ".." or a link that leads out,
// without a window between the check and the open; and only regular files
// are read, so a FIFO or device under a run file's name is refused too.
//
// The run directory itself may be a symlink (a run given on the command line
// as a link to elsewhere): it is resolved once, when the root is opened, and
// the run is everything below the directory it names.
type runRoot string

// errNotRegular reports a run file that is a directory, FIFO, device or
// socket.
var errNotRegular = errors.New("not a regular file")

func (rr runRoot) do(name string, fn func(*os.Root) error) error {
	root, err := os.OpenRoot(string(rr))
	if err != nil {
		return fmt.Errorf("run directory %s: %w", string(rr), err)
	}
	defer root.Close()
	if err := fn(root); err != nil {
		return fmt.Errorf("run directory %s: %s: %w", string(rr), name, err)
	}
	return nil
}

// stat returns the file info of name, a regular file inside the run.
func (rr runRoot) stat(name string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	err := rr.do(name, func(root *os.Root) error {
		var err error
		if fi, err = root.Stat(name); err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return errNotRegular
		}
		return nil
	})
	return fi, err
}

// open opens name, a regular file inside the run, for reading.
func (rr runRoot) open(name string) (*os.File, fs.FileInfo, error) {
	var (
		f  *os.File
		fi fs.FileInfo
	)
	err := rr.do(name, func(root *os.Root) error {
		// Stat first: opening a FIFO for reading would wait for a writer.
		if st, err := root.Stat(name); err != nil {
			return err
		} else if !st.Mode().IsRegular() {
			return errNotRegular
		}
		var err error
		if f, err = root.Open(name); err != nil {
			return err
		}
		if fi, err = f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			f = nil
			if err == nil {
				err = errNotRegular
			}
			return err
		}
		return nil
	})
	return f, fi, err
}

// readFile returns the contents of name, a regular file inside the run of
// at most maxReadBytes.
func (rr runRoot) readFile(name string) ([]byte, error) {
	f, fi, err := rr.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > maxReadBytes {
		return nil, fmt.Errorf("run directory %s: %s: %d bytes, more than the %d the dashboard reads", string(rr), name, fi.Size(), maxReadBytes)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return nil, fmt.Errorf("run directory %s: %s: %w", string(rr), name, err)
	}
	if len(b) > maxReadBytes {
		return nil, fmt.Errorf("run directory %s: %s: grew past the %d bytes the dashboard reads", string(rr), name, maxReadBytes)
	}
	return b, nil
}

// readDir lists the directory name inside the run ("." is the run itself).
func (rr runRoot) readDir(name string) ([]fs.DirEntry, error) {
	var out []fs.DirEntry
	err := rr.do(name, func(root *os.Root) error {
		d, err := root.Open(name)
		if err != nil {
			return err
		}
		defer d.Close()
		out, err = d.ReadDir(-1)
		return err
	})
	return out, err
}

// check is for the files runlog reads by path (metrics.jsonl, alerts.jsonl,
// metrics.sqlite and its -wal/-shm/-journal): it refuses a name that leads
// out of the run or is not a regular file. A missing file passes (runlog
// reads it as empty). runlog opens the path itself after the check; the
// files the server opens directly go through open and have no such window.
func (rr runRoot) check(name string) error {
	_, err := rr.stat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}
