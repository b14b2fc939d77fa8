package run

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/data/decontam"
	"github.com/kestrel-lm/kestrel/internal/data/prepare"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/eval"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/train"
	"github.com/kestrel-lm/kestrel/monitor"
)

func fileHash(t *testing.T, p string) string {
	t.Helper()
	h, err := runlog.HashFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestManifestDecontamFromProvenance: a dataset prepared against GSM8K
// only is recorded as cleaned against GSM8K only, although the run's
// config still carries [prepare.decontam]'s defaults (GSM8K, HellaSwag,
// PIQA), and kestrel eval's coverage says the same; a dataset prepared
// without decontamination and a byte-level run record "none".
func TestManifestDecontamFromProvenance(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	cfg.Prepare.Decontam.Enabled = true
	cfg.Prepare.Decontam.Index.EvalSets = cfg.Prepare.Decontam.Index.EvalSets[:1] // GSM8K
	prepareSmall(t, cfg)
	cfg.Prepare.Decontam.Index = decontam.DefaultConfig() // what the old record read
	opts, err := TrainOptions(cfg, filepath.Join(root, "run"), quietLog())
	if err != nil {
		t.Fatal(err)
	}
	opts.Data.(io.Closer).Close()
	gsm, err := datadir.Path("gsm8k/test.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	m := opts.Manifest
	if m.Decontam != "13-gram drop: gsm8k" || len(m.EvalHashes) != 1 || m.EvalHashes["decontam/gsm8k"] != fileHash(t, gsm) {
		t.Errorf("manifest decontam %q, eval_hashes %v; want gsm8k alone", m.Decontam, m.EvalHashes)
	}
	cov, err := eval.CheckCoverage("run", checkpoint.State{Tokenizer: cfg.Data.Path}, []string{"gsm8k-nll", "hellaswag", "piqa"})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{eval.Decontaminated, eval.NotDecontaminated, eval.NotDecontaminated} {
		if cov[i].Status != want {
			t.Errorf("coverage of %s: %s (%s), want %s", cov[i].Task, cov[i].Status, cov[i].Detail, want)
		}
	}

	cfg.Prepare.Decontam.Enabled = false
	prepareSmall(t, cfg)
	cfg.Prepare.Decontam.Enabled = true
	if opts, err = TrainOptions(cfg, filepath.Join(root, "run2"), quietLog()); err != nil {
		t.Fatal(err)
	}
	opts.Data.(io.Closer).Close()
	if m := opts.Manifest; m.Decontam != eval.DecontamNone || len(m.EvalHashes) != 0 {
		t.Errorf("dataset without decontamination: decontam %q, eval_hashes %v", m.Decontam, m.EvalHashes)
	}

	bytesRun := tinyRun(4)
	if opts, err = TrainOptions(bytesRun, filepath.Join(root, "run3"), quietLog()); err != nil {
		t.Fatal(err)
	}
	if m := opts.Manifest; m.Decontam != eval.DecontamNone || len(m.EvalHashes) != 0 {
		t.Errorf("byte-level run: decontam %q, eval_hashes %v", m.Decontam, m.EvalHashes)
	}
}

// TestResumeAfterEvalFileChangedIsSEV1: the eval file a dataset was
// decontaminated against changes; kestrel prepare (not forced) sees it and
// decontaminates again; the resumed run records the new hash and fires
// manifest_mismatch naming decontam/<set>.
func TestResumeAfterEvalFileChangedIsSEV1(t *testing.T) {
	root := t.TempDir()
	cfg := smallDatasetConfig(t, filepath.Join(root, "data"))
	evalFile := filepath.Join(root, "evalset.jsonl")
	writeItem := func(q string) {
		b, _ := json.Marshal(map[string]string{"question": q, "answer": "#### 4"})
		if err := os.WriteFile(evalFile, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeItem("How many apples does the farmer keep in the old barn at night when it rains heavily outside?")
	cfg.Prepare.Decontam.Enabled = true
	cfg.Prepare.Decontam.Index.EvalSets = []decontam.EvalSet{{Name: "mybench", Paths: []string{evalFile}, Fields: []string{"question", "answer"}, JoinFirst: true}}
	prep := func() bool {
		t.Helper()
		rep, err := prepare.Run(context.Background(), cfg.Prepare, prepare.RunOptions{Out: cfg.Data.Path, Log: quietLog()})
		if err != nil {
			t.Fatal(err)
		}
		return !rep.UpToDate
	}
	prep()
	// a held-out set on a BPE dataset run: scored at the final evaluation
	cfg.Eval.Heldout = []train.HeldoutSet{{Name: "wiki", Path: "${KESTREL_DATA}/wikitext-2/test.txt"}}
	dir := filepath.Join(root, "run")
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	first, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if first.EvalHashes["decontam/mybench"] != fileHash(t, evalFile) || first.Decontam != "13-gram drop: mybench" {
		t.Fatalf("first start: decontam %q, eval_hashes %v", first.Decontam, first.EvalHashes)
	}
	if prep() {
		t.Fatal("prepare rebuilt a dataset whose config, inputs and eval files did not change")
	}
	if evals := evalLinesOf(t, dir); len(evals) != 1 || !(evals[0]["bpb/heldout/wiki"] > 0) {
		t.Errorf("evaluations %v: want bpb/heldout/wiki at the final one", evals)
	}

	writeItem("How many pears does the farmer keep in the old barn at night when it rains heavily outside?")
	// before prepare runs again, a start names the eval file the dataset no longer protects
	var logged strings.Builder
	opts, err := TrainOptions(cfg, dir, logTo(&logged))
	if err != nil {
		t.Fatal(err)
	}
	opts.Data.(io.Closer).Close()
	if !strings.Contains(logged.String(), "re-run kestrel prepare") || !strings.Contains(logged.String(), "mybench: "+evalFile+" (changed since prepare") {
		t.Errorf("no warning naming the changed eval file: %s", logged.String())
	}
	if !prep() {
		t.Fatal("prepare kept the dataset after its eval file changed")
	}
	cfg.Train.Steps = 9
	if _, err := Train(context.Background(), cfg, dir, Options{Logger: quietLog()}); err != nil {
		t.Fatal(err)
	}
	last, err := runlog.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if last.EvalHashes["decontam/mybench"] != fileHash(t, evalFile) {
		t.Errorf("resumed start records %v, want the new file's hash", last.EvalHashes)
	}
	var got *runlog.Alert
	for _, a := range readAlerts(t, dir) {
		if a.Rule == monitor.RuleManifest && strings.Contains(a.Message, "eval_hashes.decontam/mybench: "+first.EvalHashes["decontam/mybench"][:16]) {
			got = &a
		}
	}
	if got == nil || got.Severity != monitor.SEV1 {
		t.Fatalf("no SEV1 manifest_mismatch naming eval_hashes.decontam/mybench: %+v", readAlerts(t, dir))
	}
}
