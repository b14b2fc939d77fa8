//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package runlock

import (
	"errors"
	"os"
)

var (
	errLocked      = errors.New("locked by another process")
	errUnsupported = errors.New("flock not available on this platform")
)

// tryFlock is not available here: the lock relies on the pid it records.
func tryFlock(*os.File) error { return errUnsupported }

// oNoFollow is not available here; open checks the path with Lstat first.
const oNoFollow = 0
