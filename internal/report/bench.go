package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// Benchmark is one in-loop benchmark metric over the run: its first and
// last value (with their steps), the best, and the standard error of the
// last when the run recorded one (bench_stderr/…).
type Benchmark struct {
	Name                string
	First, Last, Best   float64
	FirstStep, LastStep float64
	LastStderr          float64 // NaN when not recorded
	HigherIsBetter      bool
	Evaluations         int
}

// benchPrefixes are the in-loop benchmark metrics (docs/eval.md).
var benchPrefixes = []string{"bench/", "bpb/", "memorization/"}

// Benchmarks returns the in-loop benchmark metrics log recorded, in name
// order. Accuracies and memorization are better higher, bits per byte
// lower.
func Benchmarks(log *runlog.Log) []Benchmark {
	var out []Benchmark
	for _, n := range log.Names() {
		ok := false
		for _, p := range benchPrefixes {
			ok = ok || strings.HasPrefix(n, p)
		}
		if !ok {
			continue
		}
		xs, ys, err := log.Series(n, "step")
		if err != nil || len(ys) == 0 {
			continue
		}
		b := Benchmark{Name: n, First: ys[0], Last: ys[len(ys)-1], FirstStep: xs[0], LastStep: xs[len(xs)-1],
			HigherIsBetter: !strings.HasPrefix(n, "bpb/"), Evaluations: len(ys), LastStderr: math.NaN()}
		b.Best = ys[0]
		for _, y := range ys {
			if (b.HigherIsBetter && y > b.Best) || (!b.HigherIsBetter && y < b.Best) {
				b.Best = y
			}
		}
		if strings.HasPrefix(n, "bench/") {
			if v, _, ok := log.Last("bench_stderr/" + strings.TrimPrefix(n, "bench/")); ok {
				b.LastStderr = v
			}
		}
		out = append(out, b)
	}
	return out
}

// writeBenchmarks writes the report's benchmark table (nothing when the
// run ran no in-loop benchmarks).
func writeBenchmarks(b *strings.Builder, log *runlog.Log) {
	bs := Benchmarks(log)
	if len(bs) == 0 {
		return
	}
	b.WriteString("## Benchmarks\n\nIn-loop evaluation (`[eval] tasks`, docs/eval.md) at each evaluation it ran: accuracy (HellaSwag chance 0.25, PIQA 0.5; ± one standard error of the last value), bits per byte (lower is better; comparable across tokenizers) and memorization (train beside held-out documents).\n\n")
	b.WriteString("| benchmark | first (step) | last (step) | ± | best | evaluations |\n|---|---|---|---|---|---|\n")
	for _, x := range bs {
		se := "—"
		if !math.IsNaN(x.LastStderr) {
			se = fmt.Sprintf("%.4f", x.LastStderr)
		}
		fmt.Fprintf(b, "| %s | %.4f (%d) | %.4f (%d) | %s | %.4f | %d |\n", x.Name, x.First, int(x.FirstStep), x.Last, int(x.LastStep), se, x.Best, x.Evaluations)
	}
	b.WriteString("\n")
}
