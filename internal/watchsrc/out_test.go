package watchsrc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlock"
	"github.com/kestrel-lm/kestrel/monitor"
)

// writeMetrics writes a healthy n-line metrics.jsonl into dir.
func writeMetrics(t *testing.T, dir string, n int) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for s := 1; s <= n; s++ {
		fmt.Fprintf(&b, `{"step":%d,"tokens_seen":%d,"train_loss_raw":%g}`+"\n", s, s*1024, 3+1/float64(s))
	}
	p := filepath.Join(dir, "metrics.jsonl")
	if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func lines(t *testing.T, p string) int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte{'\n'})
}

// TestRunOutRule: watch --out never writes over its own source (the repro:
// watch runs/x/metrics.jsonl --out runs/x kept 0 of 154 lines), into another
// run's directory or a live run's, through a link or over a file; it writes
// a new or empty directory and replaces an earlier watch's records.
func TestRunOutRule(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "runs", "x")
	src := writeMetrics(t, run, 154)
	other := filepath.Join(root, "runs", "y")
	writeMetrics(t, other, 10)
	live := filepath.Join(root, "live")
	os.Mkdir(live, 0o755)
	lock, err := runlock.Acquire(live, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	notes := filepath.Join(root, "notes")
	os.Mkdir(notes, 0o755)
	os.WriteFile(filepath.Join(notes, "todo.txt"), []byte("keep"), 0o644)
	file := filepath.Join(root, "file.txt")
	os.WriteFile(file, []byte("keep"), 0o644)
	link := filepath.Join(root, "link")
	os.Symlink(other, link)
	earlier := filepath.Join(root, "earlier")
	for _, tc := range []struct {
		name      string
		src, out  string
		overwrite bool
		want      string // "" = watched
	}{
		{"own source file's directory", src, run, true, "holds the source being watched"},
		{"own source directory", run, run, true, "holds the source being watched"},
		{"inside the source directory", run, filepath.Join(run, "w"), true, "is inside the source being watched"},
		{"another run", src, other, true, "holds another run's records (metrics.jsonl)"},
		{"a live run", src, live, true, "holds another run's records (lock)"},
		{"a user's directory", src, notes, false, "choose another path, or pass --overwrite"},
		{"a regular file", src, file, true, "is a regular file, not a directory"},
		{"a symbolic link", src, link, true, "is a symbolic link"},
		{"new", src, earlier, false, ""},
		{"an earlier watch", src, earlier, false, ""},
		{"a user's directory, --overwrite", src, notes, true, ""},
	} {
		o := RunOptions{Out: tc.out, Overwrite: tc.overwrite, Logger: quietLogger()}
		_, err := Run(context.Background(), tc.src, testConfig(), o, func(monitor.Alert) {})
		if tc.want == "" {
			if err != nil || lines(t, filepath.Join(tc.out, "metrics.jsonl")) != 154 {
				t.Errorf("%s: %v; want 154 lines written", tc.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
	if n := lines(t, src); n != 154 {
		t.Errorf("the watched file kept %d of its 154 lines", n)
	}
	if n := lines(t, filepath.Join(other, "metrics.jsonl")); n != 10 {
		t.Errorf("the other run's metrics.jsonl kept %d of its 10 lines", n)
	}
	if b, _ := os.ReadFile(filepath.Join(notes, "todo.txt")); string(b) != "keep" {
		t.Error("the user's file was touched")
	}
	if _, err := os.Stat(filepath.Join(earlier, runlock.FileName)); err == nil {
		t.Error("the watch left its lock behind")
	}
	// An earlier watch's directory while another watch holds it.
	held, err := runlock.Acquire(earlier, quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	var he *runlock.HeldError
	if _, err := Run(context.Background(), src, testConfig(), RunOptions{Out: earlier, Logger: quietLogger()}, func(monitor.Alert) {}); !errors.As(err, &he) {
		t.Errorf("--out held by a live watch: %v; want a *runlock.HeldError", err)
	}
	if n := lines(t, filepath.Join(earlier, "metrics.jsonl")); n != 154 {
		t.Errorf("a refused watch emptied the live watch's metrics.jsonl (%d lines)", n)
	}
}

// TestRunStoreRule: --store is never the source, a link or another run's
// store.
func TestRunStoreRule(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(root, "run")
	src := writeMetrics(t, run, 20)
	os.WriteFile(filepath.Join(run, "manifest.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(run, "metrics.sqlite"), []byte(sqliteMagic), 0o644)
	os.Symlink(filepath.Join(run, "metrics.sqlite"), filepath.Join(root, "link.sqlite"))
	for _, tc := range []struct{ store, want string }{
		{src, "is an input of this command"},
		{filepath.Join(run, "metrics.sqlite"), "another run's store (manifest.json beside it)"},
		{filepath.Join(root, "link.sqlite"), "is a symbolic link"},
		{filepath.Join(root, "new.sqlite"), ""},
	} {
		_, err := Run(context.Background(), src, testConfig(), RunOptions{Store: tc.store, Logger: quietLogger()}, func(monitor.Alert) {})
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("--store %s: %v; want %q", tc.store, err, tc.want)
		}
	}
}
