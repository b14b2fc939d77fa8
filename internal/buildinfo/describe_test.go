package buildinfo

import "testing"

// TestDescribe: the linker-set revision, "-dirty" for uncommitted changes.
func TestDescribe(t *testing.T) {
	saved, savedDirty := gitSHA, gitDirty
	defer func() { gitSHA, gitDirty = saved, savedDirty }()
	for _, c := range []struct{ sha, dirty, want string }{
		{"abc123", "false", "abc123"},
		{"abc123", "true", "abc123-dirty"},
	} {
		gitSHA, gitDirty = c.sha, c.dirty
		if got := Describe(); got != c.want {
			t.Errorf("sha %q dirty %q: %q, want %q", c.sha, c.dirty, got, c.want)
		}
	}
}
