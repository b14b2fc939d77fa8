//go:build !unix

package runlock

import "os"

// pidAlive reports whether a process with this pid may run on this host.
// os.FindProcess fails for a pid that does not exist where the platform can
// tell (Windows); elsewhere the process counts as alive, so a lock is never
// taken from a process that may still run.
func pidAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
