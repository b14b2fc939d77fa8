// Package fileguard owns the one rule for the paths kestrel writes and the
// files it reads from outside.
//
// Writing: an output directory is created fresh, or replaced only when it
// carries kestrel's own marker for that kind of output (an export
// manifest, an earlier watch's record …) or when the user said so
// (Overwrite, a command's --overwrite); a regular file or anything else that
// is not a directory is never removed by a directory writer; nothing is
// written through a symbolic link; an output file is never one of the
// command's inputs nor inside an input directory.
//
// Reading: Open and ReadFile open only regular files (a FIFO, a device, a
// socket or a directory is refused with an error naming the path, so
// /dev/zero or a pipe cannot hang a command or exhaust its memory),
// ReadFile with a size bound, and Reader makes a long read honour its
// context, so Ctrl-C ends it.
//
// The package imports nothing of the project (floor 1).
package fileguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Dir is the rule for an output directory that a writer creates or
// replaces as a whole.
type Dir struct {
	Path string
	// What names the output in messages ("Hugging Face export").
	What string
	// Markers are file names inside Path any one of which marks it as
	// kestrel's own output of this kind (a regular file, not a link).
	Markers []string
	// Overwrite replaces a directory without a marker (the user asked).
	Overwrite bool
	// Flag is the option that sets Overwrite, named in a refusal
	// ("--overwrite"; "" when the command has none).
	Flag string
}

// Check returns nil when d.Path may be created (it does not exist) or
// replaced (an empty directory, one carrying a marker, or any directory
// with Overwrite). A symbolic link, a regular file or any other
// non-directory is refused whatever Overwrite says.
func (d Dir) Check() error {
	st, err := os.Lstat(d.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", d.What, d.Path, err)
	}
	if err := notLinkOrFile(d.Path, st, d.What); err != nil {
		return err
	}
	if d.Overwrite {
		return nil
	}
	ents, err := os.ReadDir(d.Path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", d.What, d.Path, err)
	}
	if len(ents) == 0 {
		return nil
	}
	if HasMarker(d.Path, d.Markers...) {
		return nil
	}
	return &RefusedError{Path: d.Path, Reason: fmt.Sprintf("exists and is not a %s kestrel wrote (no %s in it)", d.What, markerList(d.Markers)), Flag: d.Flag}
}

// HasMarker reports whether dir holds one of the named files as a regular
// file (a link or a directory of that name is no marker).
func HasMarker(dir string, names ...string) bool {
	for _, n := range names {
		if st, err := os.Lstat(filepath.Join(dir, n)); err == nil && st.Mode().IsRegular() {
			return true
		}
	}
	return false
}

func markerList(ms []string) string {
	switch len(ms) {
	case 0:
		return "marker"
	case 1:
		return ms[0]
	}
	s := ms[0]
	for _, m := range ms[1 : len(ms)-1] {
		s += ", " + m
	}
	return s + " or " + ms[len(ms)-1]
}

// notLinkOrFile refuses a symbolic link and anything that is not a
// directory.
func notLinkOrFile(path string, st fs.FileInfo, what string) error {
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return &RefusedError{Path: path, Reason: "is a symbolic link; kestrel writes no " + what + " through a link: name the real directory"}
	case !st.IsDir():
		return &RefusedError{Path: path, Reason: fmt.Sprintf("is a %s, not a directory; kestrel never removes it to write a %s", kind(st.Mode()), what)}
	}
	return nil
}

// RefusedError is a refusal to write a path: what is there and, when the
// user can override it, the flag that does.
type RefusedError struct {
	Path   string
	Reason string
	Flag   string // the override, "" when none applies
}

func (e *RefusedError) Error() string {
	s := e.Path + " " + e.Reason
	switch {
	case e.Flag != "":
		s += "; choose another path, or pass " + e.Flag + " to replace it"
	case strings.HasPrefix(e.Reason, "exists and is not"):
		s += "; choose another path (kestrel never replaces it)"
	}
	return s
}

// File is the rule for an output file that a writer installs whole.
type File struct {
	Path string
	What string // "run config", for messages
	// Marker is how every file of this kind kestrel writes starts: an
	// existing file that starts with it is replaced. nil: every existing
	// file needs Overwrite.
	Marker []byte
	// Inputs are the files and directories the command reads: Path may be
	// none of them, nor inside any of the directories.
	Inputs []string
	// Overwrite replaces an existing file without the marker.
	Overwrite bool
	Flag      string // the option that sets Overwrite
}

// Check returns nil when f.Path may be written: it is not an input and
// not inside an input directory (whatever Overwrite says), and it does
// not exist, or it is a regular file (not a link) that starts with
// f.Marker or Overwrite is set.
func (f File) Check() error {
	if err := f.notInput(); err != nil {
		return err
	}
	st, err := os.Lstat(f.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", f.What, f.Path, err)
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return &RefusedError{Path: f.Path, Reason: "is a symbolic link; kestrel writes no " + f.What + " through a link: name the real file"}
	case !st.Mode().IsRegular():
		return &RefusedError{Path: f.Path, Reason: fmt.Sprintf("is a %s, not a regular file", kind(st.Mode()))}
	}
	if f.Overwrite {
		return nil
	}
	if len(f.Marker) > 0 && startsWith(f.Path, f.Marker) {
		return nil
	}
	return &RefusedError{Path: f.Path, Reason: "exists and is not a " + f.What + " kestrel wrote", Flag: f.Flag}
}

// notInput refuses f.Path when it is one of f.Inputs or lies inside an
// input directory (compared by file identity, so links and relative
// spellings are seen through).
func (f File) notInput() error {
	for _, in := range f.Inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue // an input that is not there cannot be overwritten
		}
		if st, err := os.Stat(f.Path); err == nil && os.SameFile(st, ist) {
			return &RefusedError{Path: f.Path, Reason: "is an input of this command (" + in + "); kestrel never writes over what it reads"}
		}
		if ist.IsDir() && Within(f.Path, in) {
			return &RefusedError{Path: f.Path, Reason: "is inside " + in + ", which this command reads; write the " + f.What + " elsewhere"}
		}
	}
	return nil
}

// Within reports whether path (existing or not) is dir or lies below it,
// comparing directories by identity.
func Within(path, dir string) bool {
	dst, err := os.Stat(dir)
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	for p := abs; ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil && os.SameFile(st, dst) {
			return true
		}
		if filepath.Dir(p) == p {
			return false
		}
	}
}

func startsWith(path string, marker []byte) bool {
	fh, err := Open(path)
	if err != nil {
		return false
	}
	defer fh.Close()
	buf := make([]byte, len(marker))
	n, _ := io.ReadFull(fh, buf)
	return bytes.Equal(buf[:n], marker)
}

// kind names a file mode for messages.
func kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
