package train

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/datasrc"
)

// heldOut is a byte source "a" plus a held-out source "b" whose
// validation rows are text the run never trains on (bytes 128–255, absent
// from the corpus); weights gives the mixture weights (nil: none).
type heldOut struct {
	*datasrc.BytesSource
	weights []float64
}

func (s *heldOut) SourceNames() []string { return []string{"a", "b"} }
func (s *heldOut) ValRows(src int) int   { return s.BytesSource.ValRows(0) }
func (s *heldOut) FillVal(src, row0, n int, in, tg, sg []int32) error {
	if err := s.BytesSource.FillVal(0, row0, n, in, tg, sg); err != nil {
		return err
	}
	if src == 1 {
		for i := range in[:n*s.SeqLen()] {
			in[i], tg[i] = int32(128+(7*i+row0)%128), int32(128+(7*i+row0+1)%128)
		}
	}
	return nil
}

// weighted hides or shows MixWeights.
type weighted struct{ *heldOut }

func (s weighted) MixWeights(int) []float64 { return s.weights }

// TestValLossTrainedMixture: a source of weight 0 stays out of val_loss,
// which is the trained source's slice, and is still reported as its own
// slice; with both weighted, val_loss is their weighted mean; a source
// without weights keeps the token-weighted mean over every source.
func TestValLossTrainedMixture(t *testing.T) {
	for _, c := range []struct {
		name    string
		weights []float64 // nil: the source has no MixWeights
		want    func(a, b float64) float64
	}{
		{"held-out b", []float64{1, 0}, func(a, b float64) float64 { return a }},
		{"mixture 3:1", []float64{3, 1}, func(a, b float64) float64 { return (3*a + b) / 4 }},
		{"no weights", nil, func(a, b float64) float64 { return (a + b) / 2 }}, // equal rows and tokens
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			o := baseOpts(dir)
			o.Train.Steps, o.Train.EvalEvery = 8, 4
			h := &heldOut{BytesSource: o.Data.(*datasrc.BytesSource), weights: c.weights}
			o.Data = h
			if c.weights != nil {
				o.Data = weighted{h}
			}
			if _, err := Run(context.Background(), o); err != nil {
				t.Fatal(err)
			}
			evals := 0
			for _, l := range metricLines(t, dir, "val_loss") {
				evals++
				val, a, b := l["val_loss"], l["slice_val_loss/a"], l["slice_val_loss/b"]
				if !(b > a+0.1) {
					t.Fatalf("slices a %g b %g: the held-out text is not harder, the test proves nothing", a, b)
				}
				if want := c.want(a, b); math.Abs(val-want) > 1e-9*want {
					t.Errorf("step %v: val_loss %g, want %g (slices a %g, b %g)", l["step"], val, want, a, b)
				}
			}
			if evals != 2 {
				t.Errorf("%d evaluations, want 2", evals)
			}
		})
	}
}
