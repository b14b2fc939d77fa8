package prepare

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
)

// evalFixture is a one-source corpus of WikiText paragraphs and a
// one-item GSM8K-style eval file that matches none of them.
func evalFixture(t *testing.T) (cfg Config, evalPath string, paras []string) {
	t.Helper()
	dir := t.TempDir()
	paras = paragraphs(t, 6, 800)
	var lines []string
	for _, p := range paras {
		b, _ := json.Marshal(map[string]string{"text": p})
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(filepath.Join(dir, "web.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	evalPath = filepath.Join(dir, "eval.jsonl")
	writeEvalItem(t, evalPath, "How many apples does the farmer keep in the old barn at night when it rains heavily outside the village?")
	cfg = DefaultConfig()
	cfg.Workers = 1
	cfg.Dedup.Near = false
	cfg.Sources = []Source{{Name: "web", Inputs: []string{filepath.Join(dir, "web.jsonl")}, Format: "jsonl", Filter: "none"}}
	cfg.Decontam.Index.EvalSets = []decontam.EvalSet{{Name: "gsm8k", Paths: []string{evalPath}, Fields: []string{"question", "answer"}, JoinFirst: true}}
	return cfg, evalPath, paras
}

// writeEvalItem writes a one-item eval file and keeps its modification
// time fixed, so only its contents tell one version from another.
func writeEvalItem(t *testing.T, path, question string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"question": question, "answer": "#### 4"})
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	fixed := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := os.Chtimes(path, fixed, fixed); err != nil {
		t.Fatal(err)
	}
}

// TestPrepareRedoesDecontamWhenEvalFileChanges: an unchanged eval file
// leaves the dataset up to date; an eval file whose contents changed (same
// path, same modification time) makes prepare decontaminate again, and the
// new item, which one document contains, is caught; a new kestrel binary
// is not up to date either.
func TestPrepareRedoesDecontamWhenEvalFileChanges(t *testing.T) {
	cfg, evalPath, paras := evalFixture(t)
	out := filepath.Join(t.TempDir(), "ds")
	first, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if first.Kept.Docs != int64(len(paras)) || first.Overlap["gsm8k"] != nil && first.Overlap["gsm8k"].Docs != 0 {
		t.Fatalf("first build: kept %d of %d, overlap %+v", first.Kept.Docs, len(paras), first.Overlap["gsm8k"])
	}
	again, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil || !again.UpToDate {
		t.Fatalf("unchanged eval file: up_to_date=%v err=%v", again != nil && again.UpToDate, err)
	}

	// The benchmark's item is now a sentence of the third paragraph.
	words := strings.Fields(paras[2])
	writeEvalItem(t, evalPath, strings.Join(words[:30], " "))
	if ok, err := UpToDate(cfg, out, false); ok || err != nil {
		t.Fatalf("UpToDate after the eval file changed = %v, %v", ok, err)
	}
	redo, err := Run(context.Background(), cfg, RunOptions{Out: out})
	if err != nil {
		t.Fatal(err)
	}
	if redo.UpToDate || redo.Kept.Docs != int64(len(paras)-1) || redo.Overlap["gsm8k"] == nil || redo.Overlap["gsm8k"].Docs != 1 {
		t.Fatalf("changed eval file: up_to_date=%v kept %d, overlap %+v; want a rebuild dropping 1 document", redo.UpToDate, redo.Kept.Docs, redo.Overlap["gsm8k"])
	}
	if ok, err := UpToDate(cfg, out, false); !ok || err != nil {
		t.Fatalf("UpToDate after the rebuild = %v, %v", ok, err)
	}

	// Another kestrel build: the pipeline's code may have changed.
	saved := binaryVersion
	defer func() { binaryVersion = saved }()
	binaryVersion = func() string { return "another-build" }
	if ok, err := UpToDate(cfg, out, false); ok || err != nil {
		t.Errorf("UpToDate under another binary = %v, %v", ok, err)
	}
}

// TestProvenanceRecordsOnlyItsEvalSets: the dataset manifest's provenance
// lists the eval sets prepare decontaminated against, with the sha256 of
// each file as it read it, and nothing else; without decontamination it
// lists none.
func TestProvenanceRecordsOnlyItsEvalSets(t *testing.T) {
	cfg, evalPath, _ := evalFixture(t)
	cfg.Tokenizer.Mode = "train"
	cfg.Tokenizer.VocabSize = 300
	for _, enabled := range []bool{true, false} {
		cfg.Decontam.Enabled = enabled
		out := filepath.Join(t.TempDir(), "ds")
		if _, err := Run(context.Background(), cfg, RunOptions{Out: out}); err != nil {
			t.Fatal(err)
		}
		ds, err := shards.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		pv := ds.Manifest().Provenance
		ds.Close()
		switch {
		case pv == nil:
			t.Fatalf("decontam %v: no provenance", enabled)
		case !enabled && pv.Decontam != nil:
			t.Errorf("not decontaminated, provenance says %+v", pv.Decontam)
		case enabled && (pv.Decontam == nil || len(pv.Decontam.EvalSets) != 1 || pv.Decontam.EvalSets[0].Name != "gsm8k" ||
			len(pv.Decontam.EvalSets[0].Files) != 1 || pv.Decontam.EvalSets[0].Files[0].Path != evalPath):
			t.Errorf("decontaminated against gsm8k only, provenance says %+v", pv.Decontam)
		}
	}
}
