package run

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCheckRunDir is the output rule for a run directory, case by case: a
// missing or empty directory is a fresh run, a directory with a run's
// files is resumed, anything else is refused naming it.
func TestCheckRunDir(t *testing.T) {
	write := func(t *testing.T, p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name  string
		make  func(t *testing.T, dir string) // dir does not exist yet
		fresh bool
		want  string // "" = accepted; else a substring of the refusal
	}{
		{"missing", func(*testing.T, string) {}, false, ""},
		{"empty", func(t *testing.T, d string) { os.Mkdir(d, 0o755) }, false, ""},
		{"user's notes", func(t *testing.T, d string) { write(t, filepath.Join(d, "notes.txt"), "mine") }, false, "is not a kestrel run directory"},
		{"config.toml", func(t *testing.T, d string) { write(t, filepath.Join(d, "config.toml"), "") }, false, ""},
		{"metrics.jsonl", func(t *testing.T, d string) { write(t, filepath.Join(d, "metrics.jsonl"), "") }, false, ""},
		{"alerts and lock of a first start", func(t *testing.T, d string) { write(t, filepath.Join(d, "alerts.jsonl"), "") }, false, ""},
		{"checkpoints only", func(t *testing.T, d string) { os.MkdirAll(filepath.Join(d, "checkpoints", "step-00000010"), 0o755) }, false, ""},
		{"a run's manifest", func(t *testing.T, d string) { write(t, filepath.Join(d, "manifest.json"), `{"config_hash":"ab12"}`) }, false, ""},
		{"a dataset", func(t *testing.T, d string) {
			write(t, filepath.Join(d, "manifest.json"), `{"shards":[]}`)
			write(t, filepath.Join(d, "report.json"), `{}`)
		}, false, "is not a kestrel run directory"},
		{"a regular file", func(t *testing.T, d string) { write(t, d, "mine") }, false, "is a regular file, not a directory"},
		{"a link to a run", func(t *testing.T, d string) {
			write(t, d+".real/config.toml", "")
			os.Symlink(d+".real", d)
		}, false, "is a symbolic link"},
		{"a link to nothing", func(t *testing.T, d string) { os.Symlink(d+".nowhere", d) }, false, "is a symbolic link"},
		{"fresh, missing", func(*testing.T, string) {}, true, ""},
		{"fresh, empty", func(t *testing.T, d string) { os.Mkdir(d, 0o755) }, true, "--fresh: run directory"},
		{"fresh, a run", func(t *testing.T, d string) { write(t, filepath.Join(d, "config.toml"), "") }, true, "--fresh: run directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			tc.make(t, dir)
			err := CheckRunDir(dir, tc.fresh)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), dir)):
				t.Fatalf("err %v; want one naming %s with %q", err, dir, tc.want)
			}
		})
	}
}

// TestTrainRefusesForeignOut: train --out into a user's directory or onto
// a file is refused naming it, and nothing in it is created, moved or
// changed (the old train wrote lock, alerts.jsonl, checkpoints … into
// it). Demo refuses the same before it prepares anything.
func TestTrainRefusesForeignOut(t *testing.T) {
	root := t.TempDir()
	user := filepath.Join(root, "photos")
	os.Mkdir(user, 0o755)
	os.WriteFile(filepath.Join(user, "notes.txt"), []byte("mine"), 0o644)
	file := filepath.Join(root, "paper.tex")
	os.WriteFile(file, []byte("mine"), 0o644)
	for _, out := range []string{user, file} {
		_, err := Train(context.Background(), tinyRun(5), out, Options{Logger: quietLog()})
		if err == nil || !strings.HasPrefix(err.Error(), "train: --out: "+out) {
			t.Errorf("train --out %s: %v; want a refusal naming it", out, err)
		}
		_, err = Demo(context.Background(), DemoOptions{Quick: true, Run: out, Data: filepath.Join(root, "ds")})
		if err == nil || !strings.HasPrefix(err.Error(), "demo: --out: "+out) {
			t.Errorf("demo --out %s: %v; want a refusal naming it", out, err)
		}
	}
	ents, _ := os.ReadDir(user)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if b, _ := os.ReadFile(filepath.Join(user, "notes.txt")); !slices.Equal(names, []string{"notes.txt"}) || string(b) != "mine" {
		t.Errorf("the user's directory changed: %v %q", names, b)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Errorf("the user's file changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "ds")); err == nil {
		t.Error("demo prepared a dataset before refusing its --out")
	}
}

// TestDemoRefusesForeignDataOut: demo --data-out into a user's directory
// is refused by prepare's rule, naming it, and the directory is kept.
func TestDemoRefusesForeignDataOut(t *testing.T) {
	root := t.TempDir()
	user := filepath.Join(root, "mine")
	os.Mkdir(user, 0o755)
	os.WriteFile(filepath.Join(user, "notes.txt"), []byte("mine"), 0o644)
	_, err := Demo(context.Background(), DemoOptions{Quick: true, Run: filepath.Join(root, "run"), Data: user})
	if err == nil || !strings.Contains(err.Error(), user) || !strings.Contains(err.Error(), "not a dataset kestrel wrote") {
		t.Fatalf("demo --data-out %s: %v; want a refusal naming it", user, err)
	}
	if b, _ := os.ReadFile(filepath.Join(user, "notes.txt")); string(b) != "mine" {
		t.Errorf("the user's notes changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, "run")); err == nil {
		t.Error("demo created the run directory after its dataset was refused")
	}
}
