package openrun

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/datasrc"
)

// TestDefaultsAreConfigs: the defaults of every section Config holds are
// config.Default's.
func TestDefaultsAreConfigs(t *testing.T) {
	want, got := config.Default(), DefaultConfig()
	if got.Run.Name != want.Run.Name || got.Run.Seed != want.Run.Seed || got.Train.ValFraction != want.Train.ValFraction {
		t.Errorf("run/train defaults %+v %+v, config's %+v %v", got.Run, got.Train, want.Run, want.Train.ValFraction)
	}
	if !reflect.DeepEqual(got.Model, want.Model) || !reflect.DeepEqual(got.Data, want.Data) ||
		!reflect.DeepEqual(got.Eval, want.Eval) || !reflect.DeepEqual(got.Samples, want.Samples) {
		t.Error("a section's defaults differ from config.Default's")
	}
}

// TestReadConfigAsConfigLoad: every shipped config, read as a run's
// config.toml, decodes to the sections config.Load gives.
func TestReadConfigAsConfigLoad(t *testing.T) {
	paths, _ := filepath.Glob("../../configs/*.toml")
	if len(paths) < 3 {
		t.Fatalf("found %d shipped configs", len(paths))
	}
	for _, p := range paths {
		want, err := config.Load(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ReadConfig(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if got.Run.Name != want.Run.Name || got.Run.Seed != want.Run.Seed || got.Train.ValFraction != want.Train.ValFraction ||
			!reflect.DeepEqual(got.Model, want.Model) || !reflect.DeepEqual(got.Data, want.Data) ||
			!reflect.DeepEqual(got.Eval, want.Eval) || !reflect.DeepEqual(got.Samples, want.Samples) {
			t.Errorf("%s: ReadConfig differs from config.Load", p)
		}
	}
}

// TestReadConfigErrors: a missing config.toml is os.IsNotExist; an unknown
// key of a section Config holds names the file, line and key; one of a
// section it skips is no error.
func TestReadConfigErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Open(dir); err == nil || !os.IsNotExist(err) {
		t.Errorf("no config.toml: %v, want a not-exist error", err)
	}
	p := filepath.Join(dir, "config.toml")
	for _, tc := range []struct{ doc, want string }{
		{"[monitor]\nwhatever = 1\n[data]\ntrain = \"x.txt\"\n", ""},
		{"[data]\ntrain = \"x.txt\"\ntrian = 1\n", "config.toml:3"},
		{"[model]\nd_model = \"wide\"\n", "config.toml:2"},
	} {
		if err := os.WriteFile(p, []byte(tc.doc), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := Open(dir)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.doc, err)
		case tc.want == "" && r.Config.Data.Train != "x.txt":
			t.Errorf("%q: data.train %q", tc.doc, r.Config.Data.Train)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: %v, want an error naming %s", tc.doc, err, tc.want)
		}
	}
}

// TestOpenData: a byte-level run's data is its config's text split as
// datasrc.OpenBytes splits it; a dataset run whose dataset is gone is an
// error naming the run.
func TestOpenData(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "input.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("to be or not to be\n", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := "[run]\nseed = 7\n[model]\nseq_len = 16\n[train]\nval_fraction = 0.25\n[data]\nkind = \"bytes\"\ntrain = \"" + text + "\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	st := checkpoint.State{Tokenizer: "bytes"}
	d, err := OpenData(dir, st)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	src, err := datasrc.OpenBytes(text, "", 0.25, 16, 7)
	if err != nil {
		t.Fatal(err)
	}
	tr, va := src.Text()
	if d.Dataset != nil || !bytes.Equal(d.Train, tr) || !bytes.Equal(d.Val, va) || len(d.Val) == 0 {
		t.Errorf("train %d val %d bytes, want %d and %d", len(d.Train), len(d.Val), len(tr), len(va))
	}
	st.Tokenizer = filepath.Join(dir, "gone")
	if _, err := OpenData(dir, st); err == nil || !strings.Contains(err.Error(), "run "+dir) {
		t.Errorf("missing dataset: %v", err)
	}
}

// TestRunWithoutCheckpoints: a run whose checkpoints are gone names its
// directory when asked for one, or for its model; its codec and data
// follow the state.
func TestRunWithoutCheckpoints(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[data]\nkind = \"bytes\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Checkpoint("last"); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Checkpoint(last): %v", err)
	}
	if _, _, err := r.Model("", false, nil); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Model: %v", err)
	}
	c, err := r.Codec(checkpoint.State{Tokenizer: "bytes"})
	if err != nil || c.Decode([]int32{'h', 'i'}) != "hi" {
		t.Errorf("byte codec: %v", err)
	}
	if _, err := r.Manifest(); err == nil {
		t.Error("Manifest: no manifest.json, no error")
	}
}
