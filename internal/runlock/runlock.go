// Package runlock is the exclusive hold one trainer takes on a run
// directory, so that two trainers never write (and prune checkpoints in) the
// same directory.
//
// The lock is the file "lock" in the run directory. It names its holder
// (pid, host, start time) as one line of JSON, for the error a second
// trainer gets and for people. Where the platform has flock(2) the file is
// also flock-ed for as long as the lock is held: the kernel releases that
// hold when the process ends in any way (kill -9 included), so a lock file
// whose flock can be taken was left by a process that no longer runs and is
// taken over, with a warning naming the previous holder. Where flock is not
// available (other platforms, or a file system that refuses it) the lock
// falls back to the pid in the file: it is stale when it names this host
// and a process that no longer runs. A lock left by another host is never
// taken over automatically, because this host cannot tell whether that
// process still runs; the error says which file to remove.
//
// The lock file is never followed through a symbolic link nor opened when
// it is not a regular file: such a path is refused with an error naming
// it. A holder verifies its hold with Lock.Check (the trainer does at every
// step): a lock file removed or replaced while it was held is reported, so
// the holder stops instead of sharing the directory with a second trainer.
package runlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// FileName is the name of the lock file inside the run directory.
const FileName = "lock"

// Holder is who holds a lock: the contents of the lock file.
type Holder struct {
	PID     int    `json:"pid"`
	Host    string `json:"host"`
	Started string `json:"started"` // RFC 3339, UTC
}

func (h Holder) String() string {
	s := fmt.Sprintf("pid %d on host %s", h.PID, h.Host)
	if h.Started != "" {
		s += " (since " + h.Started + ")"
	}
	return s
}

// HeldError is returned by Acquire when another process holds the lock
// (or may hold it: see Reason).
type HeldError struct {
	Dir    string // the run directory
	Path   string // the lock file
	Holder Holder // zero when the lock file could not be read
	Reason string // why the lock counts as held
}

func (e *HeldError) Error() string {
	who := "another process"
	if e.Holder.PID != 0 || e.Holder.Host != "" {
		who = e.Holder.String()
	}
	return fmt.Sprintf("run directory %s is in use: %s holds the lock %s (%s)", e.Dir, who, e.Path, e.Reason)
}

// Lock is an exclusive hold on one run directory. Release gives it back.
type Lock struct {
	dir     string // absolute, clean
	path    string
	f       *os.File
	flocked bool
	holder  Holder

	// read is the size and modification time of the lock file when Check
	// last read it and found this process; a later Check skips the read
	// while both are the same and the modification time was older than
	// settled at that read (checkRead).
	read struct {
		ok    bool
		size  int64
		mtime time.Time
	}
}

// settled is how long before a read a lock file's modification time must
// lie for an unchanged size and time to vouch for unchanged content: file
// times are coarse (a jiffy on Linux, up to 2 s on some file systems), so
// a rewrite of the same size within that window could keep both.
const settled = 2 * time.Second

// Dir returns the (absolute) run directory the lock holds.
func (l *Lock) Dir() string { return l.dir }

// Path returns the lock file.
func (l *Lock) Path() string { return l.path }

// Holder returns what the lock file says: this process.
func (l *Lock) Holder() Holder { return l.holder }

// Held reports whether l is still held (not released).
func (l *Lock) Held() bool { return l != nil && l.f != nil }

// Holds reports whether l is held and is the lock of directory dir.
func (l *Lock) Holds(dir string) bool {
	if !l.Held() {
		return false
	}
	abs, err := filepath.Abs(dir)
	return err == nil && abs == l.dir
}

// Acquire takes the lock of run directory dir, which must exist. A lock
// held by a live process is refused with a *HeldError naming the holder's
// pid and host and the lock file; a stale one (its process ended without
// releasing it) is taken over and logged on log (nil: slog.Default()).
func Acquire(dir string, log *slog.Logger) (*Lock, error) {
	return acquire(dir, log, true)
}

// maxAttempts bounds the retries when the lock file is replaced between
// opening and locking it (a releasing holder removes it).
const maxAttempts = 16

// acquire is Acquire; useFlock false forces the pid-only fallback (tests
// run it on platforms that have flock).
func acquire(dir string, log *slog.Logger, useFlock bool) (*Lock, error) {
	if log == nil {
		log = slog.Default()
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	path := filepath.Join(abs, FileName)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	me := Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC().Format(time.RFC3339)}
	for range maxAttempts {
		f, created, err := open(path)
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(abs); serr != nil {
				return nil, fmt.Errorf("lock %s: %w", path, serr)
			}
			continue // removed between the two opens: try again
		}
		if err != nil {
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		flocked := false
		if useFlock {
			switch err := tryFlock(f); {
			case err == nil:
				flocked = true
				if !samePath(f, path) { // a releasing holder removed it meanwhile
					f.Close()
					continue
				}
			case errors.Is(err, errLocked):
				prev, _ := readHolder(f)
				f.Close()
				return nil, &HeldError{Dir: abs, Path: path, Holder: prev, Reason: "that process is running; wait for it to finish, stop it, or choose another --out"}
			case errors.Is(err, errUnsupported):
				log.Warn("run directory lock: flock is not available here; the lock relies on the pid it records", "file", path, "err", err)
			default:
				f.Close()
				return nil, fmt.Errorf("lock %s: %w", path, err)
			}
		}
		if !created {
			if err := takeOver(f, path, abs, me, flocked, log); err != nil {
				f.Close()
				return nil, err
			}
		}
		if err := writeHolder(f, me); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		return &Lock{dir: abs, path: path, f: f, flocked: flocked, holder: me}, nil
	}
	return nil, fmt.Errorf("lock %s: the lock file kept changing while it was being taken; another process is starting in this run directory", path)
}

// open opens the lock file, creating it when it does not exist; created
// says whether this call made it. It never follows a symbolic link (a
// link named lock would make the trainer write its holder line, and later
// remove, whatever the link points at) and opens nothing but a regular
// file.
func open(path string) (f *os.File, created bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|oNoFollow, 0o644)
	if err == nil {
		return f, true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return nil, false, err
	}
	if err := checkRegular(path); err != nil {
		return nil, false, err
	}
	f, err = os.OpenFile(path, os.O_RDWR|oNoFollow, 0)
	if err != nil {
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return nil, false, notRegular(path, fi)
		}
		return nil, false, err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err != nil {
			return nil, false, err
		}
		return nil, false, notRegular(path, fi)
	}
	return f, false, nil
}

// checkRegular refuses a lock path that is not a regular file (a symbolic
// link, a directory, a FIFO, a device); a missing path passes.
func checkRegular(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if !fi.Mode().IsRegular() {
		return notRegular(path, fi)
	}
	return nil
}

func notRegular(path string, fi fs.FileInfo) error {
	what := "not a regular file (" + fi.Mode().Type().String() + ")"
	if fi.Mode()&fs.ModeSymlink != 0 {
		what = "a symbolic link"
		if to, err := os.Readlink(path); err == nil {
			what += " to " + to
		}
	}
	return fmt.Errorf("%s is %s; kestrel never follows or replaces it: remove it if no trainer runs in this directory", path, what)
}

// takeOver decides about a lock file that existed before this call: it
// returns nil when the lock may be taken (logging a stale holder it
// replaces) and a *HeldError when it may not.
func takeOver(f *os.File, path, dir string, me Holder, flocked bool, log *slog.Logger) error {
	prev, err := readHolder(f)
	switch {
	case err != nil && flocked:
		// Its writer died before it wrote itself in (or the file was
		// damaged); the released flock says it is gone.
		log.Warn("run directory lock: taking over a lock file that names no holder; its flock was free", "file", path, "err", err)
		return nil
	case err != nil:
		return &HeldError{Dir: dir, Path: path, Reason: fmt.Sprintf("the lock file cannot be read (%v); if no trainer runs in this directory, remove it", err)}
	case prev.Host != me.Host:
		return &HeldError{Dir: dir, Path: path, Holder: prev, Reason: fmt.Sprintf("taken on another host, so this host (%s) cannot tell whether it still runs; if it does not, remove the lock file", me.Host)}
	case !flocked && pidAlive(prev.PID):
		return &HeldError{Dir: dir, Path: path, Holder: prev, Reason: "that process is running; wait for it to finish, stop it, or choose another --out"}
	}
	why := "its flock was released: the process ended without releasing the lock (killed?)"
	if !flocked {
		why = "that process no longer runs (killed?)"
	}
	log.Warn("run directory lock: taking over a stale lock", "file", path, "previous_pid", prev.PID, "previous_host", prev.Host, "previous_start", prev.Started, "why", why)
	return nil
}

// maxLockFile bounds what is read of a lock file.
const maxLockFile = 4096

func readHolder(f *os.File) (Holder, error) {
	var h Holder
	b, err := io.ReadAll(io.NewSectionReader(f, 0, maxLockFile))
	if err != nil {
		return h, err
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return h, errors.New("empty")
	}
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return h, fmt.Errorf("not a lock record: %w", err)
	}
	if h.PID <= 0 || h.Host == "" {
		return h, fmt.Errorf("no pid or host in %q", s)
	}
	return h, nil
}

func writeHolder(f *os.File, h Holder) error {
	b, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		return err
	}
	return f.Sync()
}

// samePath reports whether the open file f is still the file at path
// (path itself, not what a symbolic link there points at).
func samePath(f *os.File, path string) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	pi, err := os.Lstat(path)
	return err == nil && os.SameFile(fi, pi)
}

// LostError is returned by Check when the lock file this lock holds is no
// longer at its path: removed, or replaced by another file. A second
// trainer may since have taken the run directory.
type LostError struct {
	Path   string
	Reason string
}

func (e *LostError) Error() string {
	return fmt.Sprintf("run directory lock %s lost: %s; another trainer may be writing to this run directory, so this one stops without writing more (check who runs there, then rerun)", e.Path, e.Reason)
}

// Check verifies that l still holds its run directory: the lock file is
// still at its path, the same file (inode) this lock opened, and it still
// names this process. A lock file removed or replaced by hand (or by
// another tool) is reported as a *LostError, so the holder notices the loss
// instead of sharing the directory with a second trainer. Check costs two
// stat calls, and a small read while the file's size or modification time
// differ from the last read's or that time is recent (settled); the
// trainer calls it at every step.
func (l *Lock) Check() error {
	if l == nil {
		return &LostError{Reason: "no lock was taken"}
	}
	if !l.Held() {
		return &LostError{Path: l.path, Reason: "it was released"}
	}
	fi, err := l.f.Stat()
	if err != nil {
		return fmt.Errorf("lock %s: %w", l.path, err)
	}
	pi, err := os.Lstat(l.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return &LostError{Path: l.path, Reason: "the lock file was removed"}
	case err != nil:
		return fmt.Errorf("lock %s: %w", l.path, err)
	case !os.SameFile(fi, pi):
		return &LostError{Path: l.path, Reason: "the lock file was replaced by another file"}
	}
	return l.checkRead(fi, time.Now())
}

// checkRead reads the holder from the lock file (whose stat is fi, taken
// at now) unless the file is as the last read found it: the same size and
// modification time, that time settled before the read.
func (l *Lock) checkRead(fi os.FileInfo, now time.Time) error {
	if r := l.read; r.ok && fi.Size() == r.size && fi.ModTime().Equal(r.mtime) {
		return nil
	}
	l.read.ok = false
	h, err := readHolder(l.f)
	if err != nil {
		return &LostError{Path: l.path, Reason: fmt.Sprintf("the lock file no longer names this process (%v)", err)}
	}
	if h.PID != l.holder.PID || h.Host != l.holder.Host {
		return &LostError{Path: l.path, Reason: "the lock file now names " + h.String()}
	}
	if mt := fi.ModTime(); now.Sub(mt) >= settled {
		l.read.ok, l.read.size, l.read.mtime = true, fi.Size(), mt
	}
	return nil
}

// Release gives the lock back: it removes the lock file (when it is still
// this lock's file) and drops the flock. Under flock the file is removed
// while the flock is still held, so no one can take a file that is about to
// disappear; without flock it is closed first (Windows cannot remove an
// open file). It is safe to call more than once and on a nil Lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	var errs []error
	ours := samePath(l.f, l.path)
	if !l.flocked {
		errs = append(errs, l.f.Close())
	}
	if ours {
		if err := os.Remove(l.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if l.flocked {
		errs = append(errs, l.f.Close())
	}
	l.f = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}
