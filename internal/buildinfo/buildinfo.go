// Package buildinfo reports what the running binary was built from: the
// source revision (set by the Makefile's linker flags, else the Go
// toolchain's VCS stamp) and the module list.
package buildinfo

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime/debug"
	"sort"
)

// Set by the Makefile:
//
//	-ldflags "-X github.com/kestrel-lm/kestrel/internal/buildinfo.gitSHA=… -X …buildinfo.gitDirty=true"
//
// so a binary built with GOFLAGS=-buildvcs=false (or from a tree the
// toolchain cannot stamp) still knows its commit.
var (
	gitSHA   string
	gitDirty string
)

// VCS returns the commit the binary was built from and whether the working
// tree had uncommitted changes: from the linker flags when the Makefile set
// them, else from the toolchain's VCS stamp. rev is "" when the build
// carries neither (go test, go run, a plain go build with -buildvcs=false).
func VCS() (rev string, dirty bool) {
	if gitSHA != "" {
		return gitSHA, gitDirty == "true"
	}
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

// Describe is VCS as one string: the revision, with "-dirty" appended for
// uncommitted changes, or "unknown" when the build carries none.
func Describe() string {
	rev, dirty := VCS()
	switch {
	case rev == "":
		return "unknown"
	case dirty:
		return rev + "-dirty"
	}
	return rev
}

// ModulesHash is the SHA-256 of the sorted list of modules the binary was
// built with ("path version sum" per line, replacements resolved): two
// binaries with the same hash link the same dependency code. It is "" when
// the binary carries no build information.
func ModulesHash() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	lines := make([]string, 0, len(bi.Deps))
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		lines = append(lines, d.Path+" "+d.Version+" "+d.Sum)
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
