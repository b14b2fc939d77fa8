package run

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/faults"

	"github.com/kestrel-lm/kestrel/internal/config"
	"github.com/kestrel-lm/kestrel/internal/data/loader"
	"github.com/kestrel-lm/kestrel/internal/datadir"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
	"github.com/kestrel-lm/kestrel/internal/runlog"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
	"github.com/kestrel-lm/kestrel/internal/train"
)

var ref7mStall = flag.Bool("ref7m-stall", false, "TestLoaderRef7mStall: train ref7m for 30 steps on the loader and report dataloader_stall_frac (slow)")

// byteDocs reads a shipped text file as byte tokens, one document per
// paragraph (separated by sep), the first 90% for train and the rest for
// validation.
func byteDocs(t *testing.T, rel, sep string) (train, val *loader.MemStream) {
	t.Helper()
	p, err := datadir.Path(rel)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var docs [][]int32
	for _, para := range strings.Split(string(b), sep) {
		if strings.TrimSpace(para) == "" {
			continue
		}
		d := make([]int32, 0, len(para)+2)
		for _, c := range []byte(para + "\n\n") {
			d = append(d, int32(c))
		}
		docs = append(docs, d)
	}
	n := len(docs) * 9 / 10
	return loader.NewMemStream(docs[:n]), loader.NewMemStream(docs[n:])
}

// shippedByteDataset is a two-source dataset of byte tokens from shipped
// text (Shakespeare and WikiText-2), standing in for kestrel prepare output.
func shippedByteDataset(t *testing.T) *loader.Dataset {
	ds := &loader.Dataset{Name: "shipped-bytes"}
	for _, s := range []struct{ name, rel, sep string }{{"shakespeare", "tinyshakespeare/input.txt", "\n\n"}, {"wiki", "wikitext-2/valid.txt", "\n \n"}} {
		tr, va := byteDocs(t, s.rel, s.sep)
		ds.Sources = append(ds.Sources, loader.Source{Name: s.name, Train: tr, Val: va})
	}
	return ds
}

type stopAtStep struct{ step int }

func (s stopAtStep) OnStep(m *runlog.Step) error {
	if m.Step == s.step {
		return errors.New("simulated crash")
	}
	return nil
}
func (stopAtStep) OnEval(*runlog.Eval) error             { return nil }
func (stopAtStep) OnCheckpoint(*runlog.Checkpoint) error { return nil }

// loaderRunOpts builds the loader over ds the way kestrel train does
// (newLoader from a run config) with data.stages = stages, and the
// trainer's options around it.
func loaderRunOpts(t *testing.T, dir string, ds *loader.Dataset, mc model.Config, steps int, sched [][]int, stages ...loader.Stage) (train.Options, *loader.Loader) {
	t.Helper()
	cfg := config.Default()
	cfg.Run.Seed = 7
	cfg.Model = mc
	tc := train.DefaultConfig()
	tc.Steps, tc.BatchSize, tc.BatchSchedule, tc.MicroBatch, tc.EvalEvery, tc.EvalBatches, tc.LogEvery, tc.PeakGFLOPS = steps, 4, sched, 3, 0, 1, 0, 1
	cfg.Train = tc
	cfg.Optim = optim.DefaultConfig()
	cfg.Optim.Warmup = 2
	cfg.Checkpoint = train.DefaultCheckpointConfig()
	cfg.Checkpoint.Every = 4
	dc := loader.DefaultConfig()
	dc.Kind, dc.MixBlock, dc.ValMaxSeqs = "dataset", 64, 8
	dc.Sources = []loader.SourceConfig{{Name: "shakespeare", Weight: 0.7}, {Name: "wiki", Weight: 0.3}}
	dc.Stages = stages
	cfg.Data = dc
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := NewLoader(ds, cfg, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return train.Options{Dir: dir, Seed: 7, Model: mc, Optim: cfg.Optim, Train: tc, Checkpoint: cfg.Checkpoint,
		Init: train.DefaultInitConfig(), Debug: faults.Default(), Data: l, ConfigHash: "loader-test",
		Tokenizer: "bytes", Logger: quiet}, l
}

// metricLines returns the step lines (those with train_loss_raw) of a run's metrics.jsonl.
func metricLines(t *testing.T, dir string) []map[string]any {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if _, ok := m["train_loss_raw"]; ok {
			out = append(out, m)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// stepLines returns train_loss_raw and dataloader_stall_frac per step line.
func stepLines(t *testing.T, dir string) (loss, stall []float64) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		if v, ok := m["train_loss_raw"].(float64); ok {
			loss = append(loss, v)
			s, _ := m["dataloader_stall_frac"].(float64)
			stall = append(stall, s)
		}
	}
	return loss, stall
}

// TestTrainOnLoaderResume: kestrel's trainer runs on the loader (mixture of
// two shipped sources, document masking, micro-batches) across a
// train.batch_schedule entry [7, 6] and a data.stages switch with
// start_step 7 — both metrics steps, the one config convention: the
// metrics lines show batch_size 6 and only the stage's source from step 7
// on, and neither at step 6; and a run crashed at step 6 and resumed from
// its step-4 checkpoint logs exactly the losses of the uninterrupted run.
func TestTrainOnLoaderResume(t *testing.T) {
	ds := shippedByteDataset(t)
	mc := model.DefaultConfig()
	mc.DModel, mc.NLayers, mc.NHeads, mc.NKVHeads, mc.MLPHidden, mc.SeqLen, mc.DocMask = 16, 1, 2, 2, 32, 32, true
	sched := [][]int{{1, 4}, {7, 6}}
	stage := loader.Stage{StartStep: 7, Weights: map[string]float64{"wiki": 1}}
	ref := filepath.Join(t.TempDir(), "ref")
	o, _ := loaderRunOpts(t, ref, ds, mc, 9, sched, stage)
	if _, err := train.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want, _ := stepLines(t, ref)
	if len(want) != 9 {
		t.Fatalf("%d step lines, want 9", len(want))
	}
	sawShakespeare := false
	for _, m := range metricLines(t, ref) {
		step := int(m["step"].(float64))
		wantB := 4
		if step >= 7 {
			wantB = 6
		}
		wiki, ok1 := m["source_mix_share/wiki"].(float64)
		sh, ok2 := m["source_mix_share/shakespeare"].(float64)
		pad, ok3 := m["pad_fraction"].(float64)
		if !ok1 || !ok2 || !ok3 || int(m["batch_size"].(float64)) != wantB || pad != 0 {
			t.Fatalf("step %d: batch %v (want %d), shares %v/%v, pad_fraction %v", step, m["batch_size"], wantB, m["source_mix_share/wiki"], m["source_mix_share/shakespeare"], m["pad_fraction"])
		}
		if math.Abs(wiki+sh-1) > 1e-12 {
			t.Fatalf("step %d: shares %v + %v != 1", step, wiki, sh)
		}
		if step >= 7 && wiki != 1 {
			t.Fatalf("step %d: source_mix_share/wiki = %v after the stage at step 7", step, wiki)
		}
		sawShakespeare = sawShakespeare || (step == 6 && sh > 0)
	}
	if !sawShakespeare {
		t.Fatal("step 6 (before the stage at 7) has no shakespeare rows")
	}
	dir := filepath.Join(t.TempDir(), "run")
	o, _ = loaderRunOpts(t, dir, ds, mc, 9, sched, stage)
	o.Observers = []train.Observer{stopAtStep{6}}
	if _, err := train.Run(context.Background(), o); err == nil {
		t.Fatal("want the simulated crash")
	}
	o, _ = loaderRunOpts(t, dir, ds, mc, 9, sched, stage) // a fresh loader, as after a restart
	res, err := train.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatalf("run did not resume: %+v", res)
	}
	got, _ := stepLines(t, dir)
	if !slices.Equal(got, want) {
		t.Fatalf("losses differ after resume:\n got %v\nwant %v", got, want)
	}
}

// TestTrainOnLoaderRampResume: a data stage ramping over 6 steps from step
// 5 (its weights in force from step 10), with a train.batch_schedule change
// at step 7 inside the ramp: the shares move from data.sources' towards the
// stage's through the ramp, and a run crashed at step 9 and resumed from its
// step-8 checkpoint (inside the ramp) logs exactly the losses and shares of
// the uninterrupted run.
func TestTrainOnLoaderRampResume(t *testing.T) {
	ds := shippedByteDataset(t)
	mc := model.DefaultConfig()
	mc.DModel, mc.NLayers, mc.NHeads, mc.NKVHeads, mc.MLPHidden, mc.SeqLen, mc.DocMask = 16, 1, 2, 2, 32, 32, true
	sched := [][]int{{1, 4}, {7, 6}}
	stage := loader.Stage{StartStep: 5, RampSteps: 6, Weights: map[string]float64{"wiki": 1}}
	shares := func(dir string) []float64 {
		var out []float64
		for _, m := range metricLines(t, dir) {
			out = append(out, m["source_mix_share/wiki"].(float64))
		}
		return out
	}
	ref := filepath.Join(t.TempDir(), "ref")
	o, l := loaderRunOpts(t, ref, ds, mc, 12, sched, stage)
	if _, err := train.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	want, _ := stepLines(t, ref)
	wantSh := shares(ref)
	if len(want) != 12 {
		t.Fatalf("%d step lines, want 12", len(want))
	}
	// step 4: data.sources (wiki 0.3); steps 5..9 ramp; step 10 on: wiki only
	for step := 1; step <= 12; step++ {
		w := l.MixWeights(step - 1)[1]
		if step >= 5 && step < 10 && (w <= 0.3 || w >= 1) || step >= 10 && w != 1 || step < 5 && w != 0.3 {
			t.Fatalf("step %d: MixWeights wiki %v", step, w)
		}
	}
	for _, m := range metricLines(t, ref) { // the dashboard's target line is the ramp
		step := int(m["step"].(float64))
		if tgt, ok := m["source_mix_target/wiki"].(float64); !ok || tgt != l.MixWeights(step - 1)[1] {
			t.Fatalf("step %d: source_mix_target/wiki = %v, want %v", step, m["source_mix_target/wiki"], l.MixWeights(step - 1)[1])
		}
	}
	if wantSh[3] >= 0.75 || wantSh[9] != 1 || wantSh[10] != 1 {
		t.Fatalf("wiki shares %v: want data.sources' before step 5 and 1 from step 10", wantSh)
	}
	dir := filepath.Join(t.TempDir(), "run")
	o, _ = loaderRunOpts(t, dir, ds, mc, 12, sched, stage)
	o.Observers = []train.Observer{stopAtStep{9}}
	if _, err := train.Run(context.Background(), o); err == nil {
		t.Fatal("want the simulated crash")
	}
	o, _ = loaderRunOpts(t, dir, ds, mc, 12, sched, stage) // a fresh loader, as after a restart
	res, err := train.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Fatalf("run did not resume: %+v", res)
	}
	got, _ := stepLines(t, dir)
	if !slices.Equal(got, want) || !slices.Equal(shares(dir), wantSh) {
		t.Fatalf("losses or shares differ after a resume inside the ramp:\n got %v %v\nwant %v %v", got, shares(dir), want, wantSh)
	}
}

// TestLoaderRef7mStall (with -ref7m-stall) trains ref7m (seq 256) on the
// loader and logs the mean dataloader_stall_frac.
func TestLoaderRef7mStall(t *testing.T) {
	if !*ref7mStall {
		t.Skip("pass -ref7m-stall to run")
	}
	ds := shippedByteDataset(t)
	dir := t.TempDir()
	o, l := loaderRunOpts(t, dir, ds, stepbench.Ref7mConfig(), 30, [][]int{{1, 8}})
	o.Train.MicroBatch = 8
	if _, err := train.Run(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	_, stall := stepLines(t, dir)
	mean := 0.0
	for _, s := range stall[1:] { // step 1 computes its batch synchronously
		mean += s
	}
	mean /= float64(len(stall) - 1)
	st := l.Stats()
	var buf bytes.Buffer
	json.NewEncoder(&buf).Encode(map[string]any{"op": "loader_stall", "model": "ref7m", "steps": len(stall),
		"mean_dataloader_stall_frac_after_step1": mean, "step1_stall_frac": stall[0], "loader_wait_seconds": st.WaitSeconds, "mix_share_last": st.MixShare})
	t.Log(strings.TrimSpace(buf.String()))
	if mean > 0.01 {
		t.Errorf("mean dataloader_stall_frac %.4f > 1%%", mean)
	}
}
