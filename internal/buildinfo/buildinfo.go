// Package buildinfo reports the source revision the running binary was
// built from, as the Go toolchain stamped it.
package buildinfo

import "runtime/debug"

// VCS returns the commit the binary was built from and whether the working
// tree had uncommitted changes, from the build's VCS stamp. rev is "" when
// the build carries none (go test, go run, -buildvcs=false).
func VCS() (rev string, dirty bool) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "", false
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	return rev, dirty
}
