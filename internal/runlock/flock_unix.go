//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package runlock

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

var (
	errLocked      = errors.New("locked by another process")
	errUnsupported = errors.New("flock not supported")
)

// tryFlock takes an exclusive flock(2) on f without waiting. The kernel
// drops it when the file is closed or the process ends, however it ends.
func tryFlock(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EAGAIN):
			return errLocked
		case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOTSUP),
			errors.Is(err, syscall.ENOSYS), errors.Is(err, syscall.EINVAL):
			return fmt.Errorf("%w: %v", errUnsupported, err)
		default:
			return fmt.Errorf("flock: %w", err)
		}
	}
}

// oNoFollow makes opening the lock file fail on a symbolic link.
const oNoFollow = syscall.O_NOFOLLOW
