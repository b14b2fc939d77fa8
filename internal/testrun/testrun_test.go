package testrun

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datadir"
)

// TestValText: the validation file is the first 16 KiB of Tiny Shakespeare.
func TestValText(t *testing.T) {
	p, err := ValText(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	src, err := datadir.Expand(Shakespeare)
	if err != nil {
		t.Fatal(err)
	}
	all, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 16<<10 || !strings.HasPrefix(string(all), string(got)) {
		t.Fatalf("%s: %d bytes, want the first %d of %s", p, len(got), 16<<10, src)
	}
}

// TestBooks: the test's sections decode over the fixture and the dataset
// path is set; Bytes is the byte-level model at batch 4.
func TestBooks(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	cfg := Books(t, data, "\n[train]\nsteps = 7\n")
	if cfg.Train.Steps != 7 || cfg.Data.Path != data || cfg.Model.Vocab != 320 || cfg.Prepare.Tokenizer.VocabSize != 320 || len(cfg.Prepare.Sources) != 1 {
		t.Fatalf("steps %d path %q vocab %d/%d sources %d", cfg.Train.Steps, cfg.Data.Path, cfg.Model.Vocab, cfg.Prepare.Tokenizer.VocabSize, len(cfg.Prepare.Sources))
	}
	b := Bytes()
	if b.Data.Kind != "bytes" || b.Model.Vocab != 256 || b.Train.BatchSize != 4 {
		t.Fatalf("Bytes: kind %q vocab %d batch %d", b.Data.Kind, b.Model.Vocab, b.Train.BatchSize)
	}
}
