package monitor

import (
	"strings"
	"testing"
)

// benchSeries: six evaluations of a falling val_loss; the benchmark
// (bench/hellaswag/acc_norm with its standard error, or bpb/wiki) takes
// the given values, at every other evaluation when sparse (eval.every).
func benchSeries(name string, vals []float64, se float64, sparse bool) func() []map[string]float64 {
	return func() []map[string]float64 {
		var ev []map[string]float64
		k := 0
		for i := 0; k < len(vals); i++ {
			e := map[string]float64{"val_loss": 4 - 0.1*float64(i)}
			if !sparse || i%2 == 1 {
				e[name] = vals[k]
				if se > 0 {
					e["bench_stderr/"+strings.TrimPrefix(name, "bench/")] = se
				}
				k++
			}
			ev = append(ev, e)
		}
		return ev
	}
}

// TestBenchRegression: bench_regression fires when an accuracy fell at each
// of the last three benchmark evaluations by more than two standard errors
// of the difference, or a bits per byte rose by more than 1%, also when
// benchmarks run at every other evaluation; it stays quiet on changes
// within the noise, on a dip that recovers and on improvements.
func TestBenchRegression(t *testing.T) {
	const acc = "bench/hellaswag/acc_norm"
	cases := []struct {
		name  string
		evals func() []map[string]float64
		want  bool
	}{
		{"accuracy falls 3 times, beyond 2σ", benchSeries(acc, []float64{0.31, 0.30, 0.28, 0.26}, 0.01, false), true},
		{"accuracy falls 3 times, beyond 2σ, sparse", benchSeries(acc, []float64{0.31, 0.30, 0.28, 0.26}, 0.01, true), true},
		{"accuracy falls 3 times within noise (n small)", benchSeries(acc, []float64{0.31, 0.30, 0.28, 0.26}, 0.03, false), false},
		{"accuracy falls twice then recovers", benchSeries(acc, []float64{0.31, 0.28, 0.25, 0.27}, 0.005, false), false},
		{"accuracy rises", benchSeries(acc, []float64{0.25, 0.27, 0.29, 0.31}, 0.005, false), false},
		{"near chance, jitter", benchSeries(acc, []float64{0.251, 0.249, 0.252, 0.248, 0.25}, 0.0043, false), false},
		{"accuracy without stderr, falls 3 points", benchSeries("bench/piqa/acc", []float64{0.56, 0.55, 0.54, 0.53}, 0, false), true},
		{"bpb rises 3 times by 5%", benchSeries("bpb/wiki", []float64{2.30, 2.33, 2.37, 2.42}, 0, false), true},
		{"bpb rises by 0.5% in all", benchSeries("bpb/wiki", []float64{2.300, 2.303, 2.306, 2.311}, 0, false), false},
		{"bpb falls", benchSeries("bpb/val/web", []float64{3.0, 2.8, 2.6, 2.5}, 0, false), false},
	}
	for _, tc := range cases {
		for _, path := range []string{"events", "watch"} {
			t.Run(tc.name+"/"+path, func(t *testing.T) {
				m := newOptsMonitor(t, quietConfig(), Options{})
				fired := only(evalSeries(m, path, tc.evals(), 50), RuleBenchRegression)
				if (len(fired) > 0) != tc.want {
					t.Fatalf("fired %d times, want %v: %+v", len(fired), tc.want, fired)
				}
				if tc.want && (fired[0].Severity != SEV2 || !strings.Contains(fired[0].Message, "at each of the last 3") || !strings.Contains(fired[0].Runbook, "Contain:")) {
					t.Errorf("alert %+v", fired[0])
				}
			})
		}
	}
}
