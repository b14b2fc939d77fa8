package train

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
	"github.com/kestrel-lm/kestrel/internal/memplan"
	"github.com/kestrel-lm/kestrel/internal/model"
)

// withAvailable makes the memory check see avail bytes (ok false:
// unknown) for the rest of the test.
func withAvailable(t *testing.T, avail int, ok bool) {
	t.Helper()
	old := availableMemory
	availableMemory = func() (int, string, bool) { return avail, "the test", ok }
	t.Cleanup(func() { availableMemory = old })
}

// assertNothingWritten: a refused run leaves no run directory behind.
func assertNothingWritten(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("the refused run created %s (%d entries)", dir, len(entries))
	}
}

// TestMemoryCheckRefusesHugeModel: a d_model=16384 model (which died with
// Go's "fatal error: out of memory" in model.New) is refused before
// anything is allocated or written, with the estimate, the available
// memory and the knobs that reduce it in the error.
func TestMemoryCheckRefusesHugeModel(t *testing.T) {
	withAvailable(t, 8<<30, true)
	t.Setenv(SkipMemoryCheckEnv, "")
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Model = model.DefaultConfig()
	o.Model.DModel, o.Model.NHeads, o.Model.NKVHeads, o.Model.MLPHidden = 16384, 128, 128, 4*16384
	o.Data = datasrc.NewBytesSource(corpus()[:10000], corpus()[10000:], o.Model.SeqLen, 1)
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := Run(context.Background(), o)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a 16384-wide model was not refused")
	}
	est, eerr := EstimateMemory(o.Model, o.Train, true)
	if eerr != nil {
		t.Fatal(eerr)
	}
	for _, w := range []string{"not enough memory", "needs about " + gb(est.Total()), "8.6 GB is available (the test)",
		"parameters " + gb(est.Params), "AdamW", "activations for 4 sequences of 64 tokens (replicas: 1)",
		"model.d_model", "model.n_layers", "train.micro_batch", "model.seq_len", "optim.ema_beta = 0", SkipMemoryCheckEnv + "=1"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 64<<20 {
		t.Errorf("the refusal allocated %d MB", alloc>>20)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	assertNothingWritten(t, dir)
	// every part of the estimate is there: 4 bytes per parameter for the
	// weights, gradients, EMA and the weights set aside while evaluating
	// the EMA; 3× for AdamW; 4× while checkpointing
	n, _ := o.Model.NumParams()
	if est.Params != 4*n || est.Grads != 4*n || est.Optimizer != 12*n || est.EMA != 4*n || est.Checkpoint != 16*n || est.EMAEval != 4*n ||
		est.Runtime != memplan.RuntimeBytes || est.Sequences != 4 {
		t.Errorf("estimate %+v for %d parameters", est, n)
	}
	if est.Total() < 200e9 {
		t.Errorf("estimate %s for a model of %d parameters", gb(est.Total()), n)
	}
}

// TestMemoryCheck covers the limits of the check: the largest valid model
// on the real machine's memory, a run that fits, unknown availability, the
// skip variable, and the micro-batch and probe batch sizing the arena.
func TestMemoryCheck(t *testing.T) {
	t.Setenv(SkipMemoryCheckEnv, "")
	big := model.Config{Vocab: model.MaxVocab, DModel: model.MaxDModel, NLayers: model.MaxLayers, NHeads: 256, NKVHeads: 256,
		MLPHidden: model.MaxMLPHidden, SeqLen: model.MaxSeqLen, RopeTheta: 1e4, NormEps: 1e-5, InitStd: 0.02}
	o := baseOpts(filepath.Join(t.TempDir(), "run"))
	o.Model = big
	if err := checkMemory(o); err == nil || !strings.Contains(err.Error(), "not enough memory") || !strings.Contains(err.Error(), "MemAvailable") && !strings.Contains(err.Error(), "cgroup") {
		t.Fatalf("the largest valid model on this machine: %v", err)
	}
	o = baseOpts(filepath.Join(t.TempDir(), "run"))
	est, err := EstimateMemory(o.Model, o.Train, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		avail  int
		ok     bool
		skip   string
		refuse bool
	}{
		{"fits exactly", est.Total(), true, "", false},
		{"one byte short", est.Total() - 1, true, "", true},
		{"unknown", 0, false, "", false},
		{"skipped", 1, true, "1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withAvailable(t, tc.avail, tc.ok)
			t.Setenv(SkipMemoryCheckEnv, tc.skip)
			if err := checkMemory(o); (err != nil) != tc.refuse {
				t.Fatalf("refused = %v, want %v", err, tc.refuse)
			}
		})
	}
	// the arena is sized for the micro-batch, or the probe batch when larger
	for _, tc := range []struct{ batch, micro, probes, want int }{{12, 0, 4, 12}, {12, 3, 4, 4}, {12, 5, 0, 5}, {12, 20, 0, 12}} {
		c := DefaultConfig()
		c.BatchSize, c.MicroBatch, c.ProbeSequences = tc.batch, tc.micro, tc.probes
		m, err := EstimateMemory(tinyModel(), c, false)
		act, _ := tinyModel().ActivationBytes(tc.want)
		if err != nil || m.Sequences != tc.want || m.Activations != act || m.EMA != 0 || m.EMAEval != 0 {
			t.Errorf("batch %d micro %d probes %d: %+v, %v; want %d sequences", tc.batch, tc.micro, tc.probes, m, err, tc.want)
		}
	}
	// train.parallel_micro_batches: each other replica's gradients and
	// micro-batch arena, in the refusal's parts too
	c := DefaultConfig()
	c.MicroBatch, c.ProbeSequences, c.ParallelMicroBatches = 2, 4, 3
	m, err := EstimateMemory(tinyModel(), c, false)
	probe, _ := tinyModel().ActivationBytes(4)
	micro, _ := tinyModel().ActivationBytes(2)
	if err != nil || m.Replicas != 3 || m.Grads != 3*m.Params || m.Activations != probe+2*micro {
		t.Errorf("3 replicas: %+v, %v", m, err)
	}
	withAvailable(t, m.Total()-1, true)
	o.Model, o.Train, o.Optim.EMABeta = tinyModel(), c, 0
	if err := checkMemory(o); err == nil || !strings.Contains(err.Error(), "(replicas: 3)") || !strings.Contains(err.Error(), "train.parallel_micro_batches") {
		t.Errorf("refusal %v", err)
	}
}

// TestVocabOverflowRefused: --model.vocab=4611686018427387904 overflowed
// the parameter count; it is refused naming model.vocab, before anything
// is written.
func TestVocabOverflowRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	o := baseOpts(dir)
	o.Model.Vocab = 4611686018427387904
	_, err := Run(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "model.vocab must be at most") {
		t.Fatalf("err = %v, want model.vocab refused", err)
	}
	assertNothingWritten(t, dir)
}

// TestNoValidationDataRefused: byte-level data with train.val_fraction = 0
// trained until its first evaluation and failed there; it is refused
// before step 1 (datasrc.OpenBytes, and Run for any data source), with
// eval_every > 0 and with eval_every = 0 (which still evaluates at the
// end), writing nothing.
func TestNoValidationDataRefused(t *testing.T) {
	data := corpus()
	path := filepath.Join(t.TempDir(), "in.txt")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(t.TempDir(), "val.txt")
	os.WriteFile(short, data[:32], 0o644)
	for _, tc := range []struct {
		name, val string
		frac      float64
		want      string
	}{
		{"val_fraction 0", "", 0, "train.val_fraction = 0 holds out 0 bytes"},
		{"val_fraction tiny", "", 1e-4, "train.val_fraction = 0.0001 holds out 3 bytes"},
		{"val_fraction nan", "", math.NaN(), "train.val_fraction must be in [0, 1), got NaN"},
		{"val_fraction -inf", "", math.Inf(-1), "train.val_fraction must be in [0, 1)"},
		{"short data.val", short, 0.1, "data.val " + short + ": 32 bytes, need at least seq_len+1 = 33"},
	} {
		t.Run("OpenBytes/"+tc.name, func(t *testing.T) {
			_, err := datasrc.OpenBytes(path, tc.val, tc.frac, 32, 1)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := datasrc.OpenBytes(path, short, 0.1, 31, 1); err != nil {
		t.Fatalf("a data.val of seq_len+1 bytes: %v", err)
	}
	for _, every := range []int{250, 0} {
		t.Run(fmt.Sprintf("Run/eval_every=%d", every), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Train.EvalEvery = every
			o.Data = datasrc.NewBytesSource(data, nil, 32, 42) // no validation split
			_, err := Run(context.Background(), o)
			for _, w := range []string{"no validation data", "train.val_fraction", "data.val", "prepare.tokenizer.shards.val_fraction"} {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Fatalf("err = %v, want %q", err, w)
				}
			}
			assertNothingWritten(t, dir)
		})
	}
}

// TestValidateRefusesNaN: the range checks of the [train] and [checkpoint]
// sections fail for NaN too (a NaN passes `x < 0 || x >= 1`), so a
// trainer driven without internal/config (tests, other callers) still
// refuses it, naming the field.
func TestValidateRefusesNaN(t *testing.T) {
	nan := math.NaN()
	for _, tc := range []struct {
		field string
		set   func(*Config)
	}{
		{"train.val_fraction", func(c *Config) { c.ValFraction = nan }},
		{"train.loss_ema_beta", func(c *Config) { c.LossEMABeta = nan }},
		{"train.peak_gflops", func(c *Config) { c.PeakGFLOPS = nan }},
		{"train.peak_gflops", func(c *Config) { c.PeakGFLOPS = math.Inf(1) }},
		{"train.max_minutes", func(c *Config) { c.MaxMinutes = nan }},
	} {
		c := DefaultConfig()
		tc.set(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%s: Validate = %v", tc.field, err)
		}
	}
	for _, x := range []float64{nan, math.Inf(1), -1} {
		c := DefaultCheckpointConfig()
		c.EveryMinutes = x
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "checkpoint.every_minutes") {
			t.Errorf("checkpoint.every_minutes = %v: Validate = %v", x, err)
		}
	}
}
