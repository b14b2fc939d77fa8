//go:build unix

package hf

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadConfigRegularOnly: a FIFO or /dev/zero as config.json is refused
// at once, naming it (before: the FIFO hung import, /dev/zero ran it out of
// memory).
func TestReadConfigRegularOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe (FIFO), not a regular file"},
		{"dev-zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "character device, not a regular file"},
	} {
		dir := t.TempDir()
		p := filepath.Join(dir, ConfigFile)
		if err := tc.make(p); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { _, err := Load(dir); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %v; want %q naming %s", tc.name, err, tc.want, p)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: hf.Load hangs", tc.name)
		}
	}
}
