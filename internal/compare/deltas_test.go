package compare

import (
	"math"
	"testing"
)

func pts(tokPerStep int64, vs ...float64) []point {
	out := make([]point, len(vs))
	for i, v := range vs {
		out[i] = point{Step: i + 1, Tokens: int64(i+1) * tokPerStep, V: v}
	}
	return out
}

// TestTrainDeltaUnpaired: runs with different tokens per step are not
// paired: B − A is the difference of the window means and its standard
// error √(varA/nA + varB/nB); the window stops at the common tokens.
func TestTrainDeltaUnpaired(t *testing.T) {
	a := pts(10, 3, 2, 1, 2, 3, 9)  // tokens 10..60
	b := pts(15, 1, 2, 3, 2, 9, 9)  // tokens 15..90
	d := trainDelta(a, b, 0, 50, 3) // common tokens 50: A steps 3..5, B steps 1..3
	if d == nil || d.Noise != "unpaired steps" || d.StepA != 5 || d.StepB != 3 {
		t.Fatalf("%+v", d)
	}
	// A window 1,2,3: mean 2, var 1; B window 1,2,3: mean 2, var 1.
	if d.Delta != 0 || math.Abs(*d.StdErr-math.Sqrt(2.0/3)) > 1e-12 || d.Better != "" {
		t.Errorf("delta %g ± %g, better %q; want 0 ± %g", d.Delta, *d.StdErr, d.Better, math.Sqrt(2.0/3))
	}
}

// TestEvalDeltaAlign: the compared evaluation is the latest one at the
// same tokens in both runs after the shared history ("exact"), else B's
// latest against A's nearest in tokens ("nearest").
func TestEvalDeltaAlign(t *testing.T) {
	for _, tc := range []struct {
		name          string
		a, b          []point
		stepA, stepB  int
		align         string
		delta         float64
		withJitter    bool
		jitterA, jitB float64
	}{
		{"exact", pts(100, 4, 3, 2.5, 2.2), pts(100, 4, 3, 2.4, 2.0), 4, 4, "exact", -0.2, true, math.Sqrt((0.25 + 0.04) / 2 / 6), math.Sqrt((0.16 + 0.04) / 2 / 6)},
		{"nearest", pts(100, 4, 3, 2.5), pts(130, 4.1, 3.2), 3, 2, "nearest", 0.7, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := evalDelta("val_loss", &series{eval: map[string][]point{"val_loss": tc.a}}, &series{eval: map[string][]point{"val_loss": tc.b}}, 0, 1000)
			if d == nil || d.StepA != tc.stepA || d.StepB != tc.stepB || d.Align != tc.align || math.Abs(d.Delta-tc.delta) > 1e-12 {
				t.Fatalf("%+v; want steps %d/%d %s delta %g", d, tc.stepA, tc.stepB, tc.align, tc.delta)
			}
			if !tc.withJitter {
				if d.StdErr != nil {
					t.Errorf("stderr %g from fewer than 3 evaluations", *d.StdErr)
				}
				return
			}
			if want := math.Hypot(tc.jitterA, tc.jitB); d.StdErr == nil || math.Abs(*d.StdErr-want) > 1e-12 {
				t.Errorf("stderr %v, want %g", d.StdErr, want)
			}
		})
	}
}

// TestBetter: losses are better lower, bench accuracies higher, and
// memorization has no better side; within 2 standard errors nobody is.
func TestBetter(t *testing.T) {
	se := 0.01
	for _, tc := range []struct {
		metric string
		delta  float64
		want   string
	}{
		{"val_loss", -0.05, "B"}, {"val_loss", 0.05, "A"}, {"val_loss", 0.015, ""},
		{"bench/hellaswag/acc_norm", 0.05, "B"}, {"bench/hellaswag/acc_norm", -0.05, "A"},
		{"memorization/train/exact_match", 0.5, ""}, {"bpb/val", -0.05, "B"},
	} {
		if got := better(&Delta{Metric: tc.metric, Delta: tc.delta, StdErr: &se}); got != tc.want {
			t.Errorf("%s %+g ± %g: better %q, want %q", tc.metric, tc.delta, se, got, tc.want)
		}
	}
	if got := better(&Delta{Metric: "val_loss", Delta: 1}); got != "" {
		t.Errorf("no standard error: better %q", got)
	}
	zero := 0.0
	if got := better(&Delta{Metric: "train_loss_raw", Delta: -0.2, StdErr: &zero}); got != "B" {
		t.Errorf("a constant per-step difference (standard error 0): better %q, want B", got)
	}
	if got := better(&Delta{Metric: "val_loss", Delta: 0, StdErr: &zero}); got != "" {
		t.Errorf("no difference, standard error 0: better %q", got)
	}
}
