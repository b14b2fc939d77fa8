package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/shards"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// fakeDataset writes a dataset directory whose manifest.json carries pv.
func fakeDataset(t *testing.T, pv *shards.Provenance) string {
	t.Helper()
	dir := t.TempDir()
	b, err := json.Marshal(shards.Manifest{Format: shards.Format, Provenance: pv})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestCheckCoverage: each task is decontaminated, not decontaminated,
// trained on (the file, or a directory holding it), not an input, unknown
// (no provenance) or the run's own data — on datasets and byte-level runs.
func TestCheckCoverage(t *testing.T) {
	files := map[string]string{}
	for _, task := range []string{"hellaswag", "piqa", "bpb", "gsm8k-nll"} {
		fs, err := TaskFiles(task)
		if err != nil {
			t.Fatal(err)
		}
		files[task] = fs[0]
	}
	hash := func(p string) string {
		h, err := runlog.HashFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	dec := &shards.DecontamInfo{NGram: 13, Mode: "drop", EvalSets: []shards.EvalSetInfo{
		{Name: "hellaswag", Files: []shards.FileHash{{Path: "/elsewhere/hellaswag.jsonl", SHA256: hash(files["hellaswag"])}}},
		{Name: "gsm8k", Files: []shards.FileHash{{Path: files["gsm8k-nll"], SHA256: "0000"}}}, // the file changed since
	}}
	tasks := []string{"hellaswag", "piqa", "gsm8k-nll", "bpb", "memorization"}
	cases := []struct {
		name string
		pv   *shards.Provenance
		want []string
	}{
		{"decontaminated against hellaswag, wiki test an input", &shards.Provenance{Decontam: dec,
			Inputs: map[string][]string{"wiki": {files["bpb"]}}},
			[]string{Decontaminated, NotDecontaminated, NotDecontaminated, TrainedOn, RunData}},
		{"wiki directory an input", &shards.Provenance{Decontam: dec,
			Inputs: map[string][]string{"wiki": {filepath.Dir(files["bpb"]) + "/"}}},
			[]string{Decontaminated, NotDecontaminated, NotDecontaminated, TrainedOn, RunData}},
		{"not decontaminated, wiki test held out", &shards.Provenance{Inputs: map[string][]string{"books": {"/x/input.txt"}}},
			[]string{NotDecontaminated, NotDecontaminated, NotDecontaminated, NotAnInput, RunData}},
		{"dataset without provenance", nil, []string{Unknown, Unknown, Unknown, Unknown, RunData}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := checkpoint.State{Tokenizer: fakeDataset(t, tc.pv), Model: model.Config{Vocab: 320}}
			cov, err := CheckCoverage("run", st, tasks)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cov {
				if c.Task != tasks[i] || c.Status != tc.want[i] {
					t.Errorf("%s: %s (%s), want %s", tasks[i], c.Status, c.Detail, tc.want[i])
				}
				if (c.Warning() == "") != c.OK() || (!c.OK() && !strings.Contains(c.Warning(), "WARNING "+c.Task)) {
					t.Errorf("%s: warning %q for status %s", tasks[i], c.Warning(), c.Status)
				}
			}
		})
	}

	// a byte-level run trained on the WikiText-2 test file
	run := t.TempDir()
	cfg := config.Default()
	cfg.Data.Kind, cfg.Data.Train = "bytes", files["bpb"]
	b, err := config.Marshal(cfg)
	if err != nil || os.WriteFile(filepath.Join(run, "config.toml"), b, 0o644) != nil {
		t.Fatal(err)
	}
	cov, err := CheckCoverage(run, checkpoint.State{Tokenizer: "bytes", Model: model.Config{Vocab: 256}}, []string{"bpb", "piqa"})
	if err != nil || cov[0].Status != TrainedOn || cov[1].Status != NotDecontaminated {
		t.Fatalf("byte-level: %+v %v", cov, err)
	}
}

// TestRunStrict: kestrel eval warns about an uncovered task in its result
// and refuses it with Strict.
func TestRunStrict(t *testing.T) {
	_, run := tinyModel(t)
	res, err := Run(Options{Run: run, Tasks: []string{"piqa"}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Coverage) != 1 || res.Coverage[0].OK() {
		t.Fatalf("coverage %+v", res.Coverage)
	}
	// The table kestrel eval prints carries the warning (its printer:
	// cmd/kestrel/internal/show).
	if w := res.Coverage[0].Warning(); !strings.Contains(w, "WARNING piqa") {
		t.Fatalf("warning %q", w)
	}
	if _, err := Run(Options{Run: run, Tasks: []string{"piqa"}, Limit: 2, Strict: true}); err == nil || !strings.Contains(err.Error(), "--strict") {
		t.Fatalf("strict: %v", err)
	}
}
