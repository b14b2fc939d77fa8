package train

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/checkpoint"
	"github.com/kestrel-lm/kestrel/internal/kernels"
	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/optim"
)

// TestFoldedEMAMatchesSeparatePass: a run whose optimizer folds the EMA
// update into its θ pass (optim.AdamW.StepEMA) ends with the model, the
// optimizer state and the EMA weights byte for byte as a run with the
// EMA's own pass after each step, and logs the same losses: with QK-Clip
// on (it moves the params after the step, so that step keeps the
// separate pass) and off, EMA on and off, 1 and 2 threads.
func TestFoldedEMAMatchesSeparatePass(t *testing.T) {
	defer func(v bool) { foldEMA = v }(foldEMA)
	defer kernels.SetThreads(kernels.Threads())
	for _, tc := range []struct {
		tau, ema float64
		threads  int
	}{{0, 0.9, 1}, {0, 0.9, 2}, {0.08, 0.9, 2}, {0, 0, 1}} {
		name := fmt.Sprintf("τ %g, ema %g, %d threads", tc.tau, tc.ema, tc.threads)
		run := func(fold bool) string {
			foldEMA = fold
			kernels.SetThreads(tc.threads)
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Train.Steps = 8
			o.Optim.QKClipTau, o.Optim.EMABeta = tc.tau, tc.ema
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			return dir
		}
		sep, fold := run(false), run(true)
		if got, want := lossSeq(t, fold), lossSeq(t, sep); !slices.Equal(got, want) {
			t.Errorf("%s: losses differ:\n folded   %v\n separate %v", name, got, want)
		}
		if tc.tau > 0 {
			clipped := 0
			for _, l := range readLines(t, fold) {
				if s := string(l["qk_clipped_heads"]); s != "" && s != "0" {
					clipped++
				}
			}
			if clipped == 0 {
				t.Errorf("%s: QK-Clip clipped no head: the case tests nothing", name)
			}
		}
		a, b := filepath.Join(sep, "checkpoints", checkpoint.Name(8)), filepath.Join(fold, "checkpoints", checkpoint.Name(8))
		files := []string{checkpoint.ModelFile, checkpoint.OptimizerFile}
		if tc.ema > 0 {
			files = append(files, checkpoint.EMAFile)
		}
		for _, f := range files {
			if fileSum(t, a, f) != fileSum(t, b, f) {
				t.Errorf("%s: %s differs between the folded and the separate EMA pass", name, f)
			}
		}
	}
}

// TestFoldEMAChoice: the step folds the EMA into the optimizer's θ pass
// only where nothing moves the params between them: not with QK-Clip on
// at the step, not with the MoE router bias, not without an EMA.
func TestFoldEMAChoice(t *testing.T) {
	ema := optim.NewEMA(0.9, make([]float32, 4))
	dense := tinyModel()
	moeBias := tinyModel()
	moeBias.MoEEvery, moeBias.MoEBalance = 1, "bias"
	moeAux := tinyModel()
	moeAux.MoEEvery, moeAux.MoEBalance = 1, "aux"
	for _, tc := range []struct {
		name string
		cfg  model.Config
		ema  *optim.EMA
		qk   *qkClipper
		want bool
	}{
		{"dense, EMA", dense, ema, nil, true},
		{"dense, no EMA", dense, nil, nil, false},
		{"QK-Clip on", dense, ema, &qkClipper{tau: 1}, false},
		{"MoE router bias", moeBias, ema, nil, false},
		{"MoE aux loss", moeAux, ema, nil, true},
	} {
		tr := &trainer{ema: tc.ema, net: modelNet{m: &model.Model{Cfg: tc.cfg}}}
		if got := tr.foldEMA(tc.qk) != nil; got != tc.want {
			t.Errorf("%s: folds %v, want %v", tc.name, got, tc.want)
		}
	}
}
