//go:build unix

package fileguard

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tree builds the cases the rules are judged on under a temporary dir.
func tree(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(d, "empty"), 0o755))
	must(os.Mkdir(filepath.Join(d, "user"), 0o755))
	must(os.WriteFile(filepath.Join(d, "user", "config.json"), []byte("{}"), 0o644))
	must(os.WriteFile(filepath.Join(d, "user", "notes.txt"), []byte("mine"), 0o644))
	must(os.Mkdir(filepath.Join(d, "ours"), 0o755))
	must(os.WriteFile(filepath.Join(d, "ours", "marker.json"), []byte("{}"), 0o644))
	must(os.Mkdir(filepath.Join(d, "fake"), 0o755))
	must(os.Mkdir(filepath.Join(d, "fake", "marker.json"), 0o755)) // a directory is no marker
	must(os.WriteFile(filepath.Join(d, "file"), []byte("x"), 0o644))
	must(os.Symlink(filepath.Join(d, "ours"), filepath.Join(d, "link")))
	must(os.WriteFile(filepath.Join(d, "cfg.toml"), []byte("# ours\nx = 1\n"), 0o644))
	must(os.WriteFile(filepath.Join(d, "other.toml"), []byte("x = 1\n"), 0o644))
	must(os.Symlink(filepath.Join(d, "cfg.toml"), filepath.Join(d, "cfglink.toml")))
	must(syscall.Mkfifo(filepath.Join(d, "fifo"), 0o644))
	return d
}

func TestDirCheck(t *testing.T) {
	d := tree(t)
	for _, c := range []struct {
		path      string
		overwrite bool
		want      string // "" = allowed, else a fragment of the refusal
	}{
		{"absent", false, ""},
		{"empty", false, ""},
		{"ours", false, ""},
		{"user", false, "is not a test output kestrel wrote (no marker.json in it); choose another path, or pass --overwrite"},
		{"user", true, ""},
		{"fake", false, "no marker.json"},
		{"file", false, "is a regular file, not a directory"},
		{"file", true, "is a regular file, not a directory"},
		{"link", false, "is a symbolic link"},
		{"link", true, "is a symbolic link"},
		{"fifo", true, "is a named pipe (FIFO), not a directory"},
	} {
		err := Dir{Path: filepath.Join(d, c.path), What: "test output", Markers: []string{"marker.json"}, Overwrite: c.overwrite, Flag: "--overwrite"}.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s (overwrite %v): %v; want %q", c.path, c.overwrite, err, c.want)
		}
	}
}

func TestFileCheck(t *testing.T) {
	d := tree(t)
	for _, c := range []struct {
		path      string
		inputs    []string
		overwrite bool
		want      string
	}{
		{"new.toml", nil, false, ""},
		{"cfg.toml", nil, false, ""},
		{"other.toml", nil, false, "exists and is not a run config kestrel wrote"},
		{"other.toml", nil, true, ""},
		{"cfglink.toml", nil, true, "is a symbolic link"},
		{"fifo", nil, true, "is a named pipe (FIFO), not a regular file"},
		{"empty", nil, true, "is a directory, not a regular file"},
		{"user/config.json", []string{"user"}, true, "is inside"},
		{"user/new.toml", []string{"user"}, false, "is inside"},
		{"cfg.toml", []string{"cfglink.toml"}, true, "is an input of this command"},
		{"./ours/../cfg.toml", []string{"cfg.toml"}, true, "is an input of this command"},
	} {
		var ins []string
		for _, in := range c.inputs {
			ins = append(ins, filepath.Join(d, in))
		}
		err := File{Path: filepath.Join(d, c.path), What: "run config", Marker: []byte("# ours"), Inputs: ins, Overwrite: c.overwrite, Flag: "--overwrite"}.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s (inputs %v, overwrite %v): %v; want %q", c.path, c.inputs, c.overwrite, err, c.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	d := tree(t)
	big := filepath.Join(d, "big")
	if err := os.WriteFile(big, make([]byte, 100), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		limit int64
		want  string
	}{
		{"cfg.toml", 0, ""},
		{"cfglink.toml", 100, ""}, // links to regular files are read
		{"big", 100, ""},
		{"big", 99, "100 bytes, over the 99-byte limit"},
		{"fifo", 0, "is a named pipe (FIFO), not a regular file"},
		{"empty", 0, "is a directory, not a regular file"},
		{"absent", 0, "no such file"},
	} {
		done := make(chan error, 1)
		go func() { _, err := ReadFile(filepath.Join(d, c.path), c.limit); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadFile hangs", c.path)
		}
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s (limit %d): %v; want %q", c.path, c.limit, err, c.want)
		}
	}
	if _, err := ReadFile("/dev/zero", 1<<20); err == nil || !strings.Contains(err.Error(), "character device") {
		t.Errorf("/dev/zero: %v; want a refusal naming a character device", err)
	}
}

func TestReaderHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	r := Reader(ctx, strings.NewReader("abc"))
	b := make([]byte, 1)
	if n, err := r.Read(b); n != 1 || err != nil {
		t.Fatalf("read before cancel: %d, %v", n, err)
	}
	cancel()
	if _, err := r.Read(b); !errors.Is(err, context.Canceled) {
		t.Fatalf("read after cancel: %v; want context.Canceled", err)
	}
}
