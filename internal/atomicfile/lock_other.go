//go:build !unix

package atomicfile

import "os"

// lockDir is a no-op where flock is not available: a temporary directory
// of a live process cannot be told from a stale one there.
func lockDir(string) (*os.File, error) { return nil, nil }

// dirInUse is always false where flock is not available.
func dirInUse(string) bool { return false }
