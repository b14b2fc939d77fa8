//go:build unix

package runlock

import (
	"errors"
	"syscall"
)

// pidAlive reports whether a process with this pid runs on this host:
// signal 0 checks without sending anything (EPERM: it runs as another user).
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
