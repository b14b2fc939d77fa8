//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// lockDir opens dir and takes a non-blocking exclusive flock on it, held
// until the returned file is closed (or the process dies, however it dies).
func lockDir(dir string) (*os.File, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// dirInUse reports whether a live process (this one included) holds the
// lock lockDir takes on dir.
func dirInUse(dir string) bool {
	f, err := lockDir(dir)
	if err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	f.Close()
	return false
}
