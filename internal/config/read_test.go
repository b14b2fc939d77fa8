package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/tomlstrict"
)

// TestLoadOnlyRegularBounded: a config path that is a FIFO, a device, a
// directory or a file over tomlstrict.MaxBytes is refused at once with an
// error naming it (a FIFO used to block Load forever, /dev/zero to read
// until memory ran out); each case runs under a timeout.
func TestLoadOnlyRegularBounded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "config.toml")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	big := filepath.Join(dir, "big.toml")
	if err := os.WriteFile(big, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, tomlstrict.MaxBytes+1); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		want       []string
	}{
		{"fifo", fifo, []string{fifo, "named pipe (FIFO), not a regular file"}},
		{"dev zero", "/dev/zero", []string{"/dev/zero", "character device, not a regular file"}},
		{"directory", dir, []string{dir, "directory, not a regular file"}},
		{"over the TOML bound", big, []string{big, "over the 8388608-byte limit"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(tc.path); err != nil {
				t.Skipf("%s: %v", tc.path, err)
			}
			done := make(chan error, 1)
			go func() { _, err := Load(tc.path, nil); done <- err }()
			select {
			case err := <-done:
				if err == nil {
					t.Fatal("Load accepted it")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not mention %q", err, w)
					}
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Load hung on it")
			}
		})
	}
}
