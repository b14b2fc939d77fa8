//go:build unix

package eval

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within fails t when fn does not return in 5 s (a FIFO used to hang it).
func within(t *testing.T, name string, fn func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatalf("%s hangs", name)
		return nil
	}
}

// TestDegenerateInputs: an empty task file, a FIFO or /dev/zero where a
// task or score file is expected, a score file over the bound and a
// negative --limit are refused with a message naming what is wrong (before:
// acc 0.0000 with rc 0, a hang, an out-of-memory, "all").
func TestDegenerateInputs(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.jsonl")
	os.WriteFile(empty, []byte("\n  \n"), 0o644)
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.txt")
	os.WriteFile(big, make([]byte, MaxScoreBytes+1), 0o644)
	emptyText := filepath.Join(dir, "empty.txt")
	os.WriteFile(emptyText, nil, 0o644)
	for _, c := range []struct {
		name string
		fn   func() error
		want string
	}{
		{"hellaswag: empty file", func() error { _, err := ReadHellaSwag(empty, 0); return err }, empty + ": no items"},
		{"piqa: empty labels", func() error { _, err := ReadPIQA(empty, empty, 0); return err }, ": no items"},
		{"gsm8k: empty file", func() error { _, err := ReadGSM8K(empty, 0); return err }, empty + ": no items"},
		{"hellaswag: FIFO", func() error { _, err := ReadHellaSwag(fifo, 0); return err }, fifo + " is a named pipe (FIFO), not a regular file"},
		{"hellaswag: /dev/zero", func() error { _, err := ReadHellaSwag("/dev/zero", 0); return err }, "character device, not a regular file"},
		{"score: file over the bound", func() error { _, err := ScoreText(ScoreOptions{Run: dir, File: big}); return err }, "over the 1048576-byte limit"},
		{"score: FIFO", func() error { _, err := ScoreText(ScoreOptions{Run: dir, File: fifo}); return err }, "named pipe (FIFO)"},
		{"score: /dev/zero", func() error { _, err := ScoreText(ScoreOptions{Run: dir, File: "/dev/zero"}); return err }, "character device"},
		{"score: empty file", func() error { _, err := ScoreText(ScoreOptions{Run: dir, File: emptyText}); return err }, "is empty: nothing to score"},
		{"eval: --dump into the run", func() error {
			_, err := Run(Options{Run: dir, Tasks: []string{"hellaswag"}, Dump: filepath.Join(dir, "dump.jsonl")})
			return err
		}, "is inside " + dir},
		{"eval: --limit -5", func() error { _, err := Run(Options{Run: dir, Tasks: []string{"hellaswag"}, Limit: -5}); return err }, "--limit -5: want a positive count"},
	} {
		err := within(t, c.name, c.fn)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want %q", c.name, err, c.want)
		}
	}
}
