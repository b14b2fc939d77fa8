package stepbench

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/kernels/ops"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/peak"
	"github.com/kestrel-lm/kestrel/internal/train"
)

// TestBenchStep times a tiny model: the loss falls on a fixed random batch,
// the rates are positive and consistent, and bad options are errors.
func TestBenchStep(t *testing.T) {
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	r, err := BenchStep(context.Background(), StepBenchOptions{Model: cfg, Batch: 2, Steps: 5, Warmup: 1, PeakGFLOPS: 100})
	if err != nil {
		t.Fatal(err)
	}
	if r.Steps != 5 || r.Batch != 2 || r.Seq != 8 || !(r.TokensPerSec > 0) || !(r.MFU > 0) || !(r.LossLast < r.LossFirst) {
		t.Fatalf("%+v", r)
	}
	if got := float64(r.Batch*r.Seq) / r.StepSec; got != r.TokensPerSec {
		t.Errorf("tokens/s %v, batch·seq/step %v", r.TokensPerSec, got)
	}
	if got := r.TokensPerSec * r.FLOPsPerToken / 100e9; r.PeakGFLOPS != 100 || r.PeakSource != "configured" || got != r.MFU {
		t.Errorf("peak %v from %q, mfu %v; want 100 configured, mfu %v", r.PeakGFLOPS, r.PeakSource, r.MFU, got)
	}
	if r.PeakProbeGFLOPS != 0 {
		t.Errorf("configured peak: probe %v, want none", r.PeakProbeGFLOPS)
	}
	// From the cache: the start-up probe is reported beside the cached peak.
	cacheDir := t.TempDir()
	t.Setenv(peak.EnvCacheDir, cacheDir)
	const seeded = 1e5 // GFLOP/s: above any probe, so the cache is never raised
	if _, _, err := peak.Record(peak.CachePath(cacheDir), peak.CurrentKey(kernels.Threads()),
		peak.Entry{GFLOPS: seeded, MeasuredAt: time.Now()}, false); err != nil {
		t.Fatal(err)
	}
	c, err := BenchStep(context.Background(), StepBenchOptions{Model: cfg, Batch: 2, Steps: 2, Warmup: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.PeakGFLOPS != seeded || c.PeakSource != "cached" || !(c.PeakProbeGFLOPS > 0 && c.PeakProbeGFLOPS < seeded) {
		t.Errorf("cached peak %v from %q, probe %v; want %v from the cache and a probe below it",
			c.PeakGFLOPS, c.PeakSource, c.PeakProbeGFLOPS, seeded)
	}
	for _, bad := range []StepBenchOptions{{Model: cfg, Batch: 1}, {Model: cfg, Steps: 1}} {
		if _, err := BenchStep(context.Background(), bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestStepPresets checks that every preset is a valid model of the size its
// name says, and that an unknown name is an error listing the known ones.
func TestStepPresets(t *testing.T) {
	want := map[string][2]float64{"ref7m": {7e6, 8e6}, "30m": {25e6, 35e6}, "124m": {118e6, 130e6}}
	for _, p := range StepPresets() {
		if err := p.Model.Validate(); err != nil {
			t.Errorf("%s: %v", p.Name, err)
			continue
		}
		n, err := p.Model.NumParams()
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[p.Name]
		if !ok || float64(n) < w[0] || float64(n) > w[1] || p.Batch < 1 {
			t.Errorf("%s: %d params, batch %d; want %v", p.Name, n, p.Batch, w)
		}
		if got, err := LookupStepPreset(p.Name); err != nil || got.Name != p.Name {
			t.Errorf("LookupStepPreset(%q) = %v, %v", p.Name, got.Name, err)
		}
	}
	if _, err := LookupStepPreset("gpt5"); err == nil || !strings.Contains(err.Error(), "ref7m") {
		t.Errorf("unknown preset: %v", err)
	}
}

// TestBenchStepThreads runs a tiny model on 1 and 2 threads: one result per
// count in order, the thread count restored, scaling efficiency computed
// from the 1-thread run, and a count below 1 refused.
func TestBenchStepThreads(t *testing.T) {
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	opt := StepBenchOptions{Model: cfg, Batch: 2, Steps: 2, Warmup: 1, PeakGFLOPS: 100}
	before := kernels.Threads()
	rs, err := BenchStepThreads(context.Background(), opt, []int{1, 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Threads != 1 || rs[1].Threads != 2 || kernels.Threads() != before {
		t.Fatalf("threads %d, %d results, restored to %d (was %d)", rs[0].Threads, len(rs), kernels.Threads(), before)
	}
	if rs[0].LossFirst != rs[1].LossFirst || !(rs[1].PeakRSSMB > 0) {
		t.Errorf("runs differ: first losses %v, %v; peak RSS %v", rs[0].LossFirst, rs[1].LossFirst, rs[1].PeakRSSMB)
	}
	// (kestrel bench step prints it rounded, for the 2-thread result only:
	// cmd/kestrel/internal/show.)
	if eff, want := rs[1].ScalingEfficiency(rs[0]), rs[1].TokensPerSec/(2*rs[0].TokensPerSec); math.Abs(eff-want) > 1e-12*want {
		t.Errorf("scaling_efficiency %v, want %v", eff, want)
	}
	if _, err := BenchStepThreads(context.Background(), opt, []int{0}); err == nil {
		t.Error("0 threads accepted")
	}
}

// TestStepBenchFromRun takes the micro-batch when set (at most the global
// batch, as training caps it), else the global batch; and of
// parallel_micro_batches at most the step's micro-batches.
func TestStepBenchFromRun(t *testing.T) {
	for _, tc := range []struct{ global, micro, par, want, wantPar int }{
		{12, 0, 1, 12, 1}, {12, 4, 1, 4, 1}, {12, 24, 1, 12, 1},
		{12, 6, 2, 6, 2}, {12, 6, 4, 6, 2}, {12, 5, 4, 5, 3}, {12, 0, 2, 12, 1}, {12, 24, 2, 12, 1},
	} {
		c := train.DefaultConfig()
		c.BatchSize, c.MicroBatch, c.ParallelMicroBatches, c.PeakGFLOPS = tc.global, tc.micro, tc.par, 42
		o := StepBenchFromRun(model.DefaultConfig(), c, 3, 1)
		if o.Batch != tc.want || o.Parallel != tc.wantPar || o.PeakGFLOPS != 42 || o.Steps != 3 || o.Warmup != 1 || o.Model != model.DefaultConfig() {
			t.Errorf("batch %d micro %d: %+v", tc.global, tc.micro, o)
		}
	}
}

// TestBenchStepBadOptions: a bad flag is reported as the flag, before any
// model is built or thread count run.
func TestBenchStepBadOptions(t *testing.T) {
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	for _, tc := range []struct {
		opt     StepBenchOptions
		threads []int
		want    string
	}{
		{StepBenchOptions{Model: cfg, Batch: 2, Steps: 0}, []int{1, 2}, "bench step: --steps must be >= 1, got 0"},
		{StepBenchOptions{Model: cfg, Batch: 0, Steps: 1}, []int{2}, "bench step: --batch must be >= 1, got 0"},
		{StepBenchOptions{Model: cfg, Batch: 1, Steps: 1}, []int{1, 0}, "bench step: --threads must be >= 1, got 0"},
	} {
		rs, err := BenchStepThreads(context.Background(), tc.opt, tc.threads)
		if err == nil || err.Error() != tc.want || len(rs) != 0 {
			t.Errorf("%+v on %v: %d results, error %v; want %q", tc.opt, tc.threads, len(rs), err, tc.want)
		}
	}
}

// TestBenchStepBF16: --precision bf16 trains (on the reference kernel when
// the CPU has no bf16) and reports its precision; MFU divides by the bf16
// kernel's peak from its own cache entry (peak.BF16Key), or on the
// reference kernel by the FMA peak it runs on; an unknown precision is
// refused.
func TestBenchStepBF16(t *testing.T) {
	t.Setenv(ops.BF16ReferenceEnv, "1")
	cacheDir := t.TempDir()
	t.Setenv(peak.EnvCacheDir, cacheDir)
	const fma, bf16 = 3e5, 1e5 // GFLOP/s: above any probe, so neither is raised
	for k, g := range map[peak.Key]float64{peak.CurrentKey(kernels.Threads()): fma, peak.BF16Key(kernels.Threads()): bf16} {
		if _, _, err := peak.Record(peak.CachePath(cacheDir), k, peak.Entry{GFLOPS: g, MeasuredAt: time.Now()}, false); err != nil {
			t.Fatal(err)
		}
	}
	want := bf16
	if kernels.BF16Impl() == "ref" {
		want = fma
	}
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 1, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	r, err := BenchStep(context.Background(), StepBenchOptions{Model: cfg, Batch: 2, Steps: 3, Warmup: 1, Precision: "bf16"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Precision != "bf16" || r.PeakGFLOPS != want || !strings.HasPrefix(r.PeakDtype, "bf16") || !(r.LossLast < r.LossFirst) {
		t.Errorf("bf16 on %s: precision %q, peak %v (%q), want %v; loss %v → %v", kernels.BF16Impl(), r.Precision, r.PeakGFLOPS, r.PeakDtype, want, r.LossFirst, r.LossLast)
	}
	if got := r.TokensPerSec * r.FLOPsPerToken / (want * 1e9); got != r.MFU {
		t.Errorf("mfu %v, want %v (the bf16 peak)", r.MFU, got)
	}
	if _, err := BenchStep(context.Background(), StepBenchOptions{Model: cfg, Batch: 2, Steps: 1, Precision: "fp8"}); err == nil {
		t.Error("precision fp8 accepted")
	}
}
