//go:build unix

package runlog

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunFilesMustBeRegular: a FIFO or /dev/zero where interventions.jsonl,
// manifest.json or metrics.jsonl is expected is refused at once, naming the
// path (before: a FIFO hung the reader, /dev/zero exhausted memory).
func TestRunFilesMustBeRegular(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
		want string
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe (FIFO), not a regular file"},
		{"dev-zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "character device, not a regular file"},
	} {
		for _, file := range []string{InterventionsFile, ManifestFile, "metrics.jsonl"} {
			dir := t.TempDir()
			p := filepath.Join(dir, file)
			if err := tc.make(p); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() {
				var err error
				switch file {
				case InterventionsFile:
					_, err = ReadInterventions(dir)
				case ManifestFile:
					_, err = ReadManifest(dir)
				default:
					_, err = LastStep(p)
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s as %s: %v; want %q naming it", tc.name, file, err, tc.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%s as %s: the reader hangs", tc.name, file)
			}
		}
	}
}

// TestReadAlertsLongLine: an alerts.jsonl line over the line bound is an
// error naming the file and line, not a read of unbounded size.
func TestReadAlertsLongLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "alerts.jsonl")
	os.WriteFile(p, []byte(`{"pad":"`+strings.Repeat("x", maxLineBytes)+"\"}\n"), 0o644)
	if _, err := ReadAlerts(p); err == nil || !strings.Contains(err.Error(), p+":1: line over") {
		t.Errorf("err %v; want one naming %s:1", err, p)
	}
}
