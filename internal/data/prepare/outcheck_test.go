package prepare

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrepareOutRule: prepare --out never replaces a user's directory, a
// file or a symbolic link (before, each was moved aside and deleted); a
// new directory or an earlier dataset is written.
func TestPrepareOutRule(t *testing.T) {
	in := t.TempDir()
	os.WriteFile(filepath.Join(in, "good.jsonl"), []byte(`{"text":"a good document with enough words"}`+"\n"), 0o644)
	root := t.TempDir()
	notes := filepath.Join(root, "notes")
	os.Mkdir(notes, 0o755)
	os.WriteFile(filepath.Join(notes, "todo.txt"), []byte("keep"), 0o644)
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("keep"), 0o644)
	ds := filepath.Join(root, "ds")
	link := filepath.Join(root, "link")
	os.Symlink(notes, link)
	for _, tc := range []struct {
		name, out, want string
		force           bool
	}{
		{"new", ds, "", false},
		{"earlier dataset", ds, "", true},
		{"user's directory", notes, "is not a dataset kestrel wrote (no report.json or manifest.json in it)", true},
		{"regular file", file, "is a regular file, not a directory", true},
		{"symbolic link", link, "is a symbolic link", true},
	} {
		_, err := Run(context.Background(), smallConfig(in), RunOptions{Out: tc.out, Force: tc.force, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	for _, p := range []string{filepath.Join(notes, "todo.txt"), file} {
		if b, err := os.ReadFile(p); err != nil || string(b) != "keep" {
			t.Errorf("%s lost: %q %v", p, b, err)
		}
	}
}
