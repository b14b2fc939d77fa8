package runlock

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// FileLock is an exclusive flock(2) on a lock file, held for one
// read-modify-write of a file shared by several commands (the quarantine
// overlay of a dataset). Unlike Lock it records no holder and the file is
// left in place when released (removing it would let a waiter and a newcomer
// hold two different files).
type FileLock struct {
	path string
	f    *os.File
}

// LockFile takes an exclusive flock on the file at path, creating it when
// it does not exist, waiting up to wait for another holder to release it.
// Like Acquire it never follows a symbolic link and opens only a regular
// file. Where flock is not available the lock is a no-op: the caller's
// write is still atomic, but two concurrent writers may lose an update.
func LockFile(path string, wait time.Duration) (*FileLock, error) {
	if err := checkRegular(path); err != nil {
		return nil, fmt.Errorf("lock %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = notRegular(path, fi)
		}
		return nil, fmt.Errorf("lock %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := tryFlock(f)
		switch {
		case err == nil, errors.Is(err, errUnsupported):
			return &FileLock{path: path, f: f}, nil
		case !errors.Is(err, errLocked):
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		case time.Now().After(deadline):
			f.Close()
			return nil, fmt.Errorf("lock %s: another process has held it for %s; try again when it has finished", path, wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Release drops the flock (the file stays). Safe on nil and more than once.
func (l *FileLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	if err != nil {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}
