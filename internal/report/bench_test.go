package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/runlog"
)

// TestBenchmarkTable: the in-loop benchmarks of a run become the report's
// table (first, last, best in the right direction, the last standard
// error) and its bench.png / bpb.png; a run without them has neither.
func TestBenchmarkTable(t *testing.T) {
	dir := t.TempDir()
	writeMetrics(t, dir, 100, 0)
	f, err := os.OpenFile(filepath.Join(dir, "metrics.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	acc := []float64{0.25, 0.27, 0.31, 0.29}
	bpb := []float64{3.1, 2.6, 2.4, 2.5}
	for i := range acc {
		s := 25 * (i + 1)
		fmt.Fprintf(f, `{"step":%d,"tokens_seen":%d,"val_loss":4,"bench/hellaswag/acc_norm":%g,"bench_stderr/hellaswag/acc_norm":0.0137,"bpb/wiki":%g,"memorization/train/exact_match":0}`+"\n", s, s*4096, acc[i], bpb[i])
	}
	f.Close()
	log, err := runlog.Load(filepath.Join(dir, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	bs := Benchmarks(log)
	if len(bs) != 3 {
		t.Fatalf("benchmarks %+v", bs)
	}
	got := map[string]Benchmark{}
	for _, b := range bs {
		got[b.Name] = b
	}
	h, w := got["bench/hellaswag/acc_norm"], got["bpb/wiki"]
	f32 := func(x float64) float64 { return float64(float32(x)) } // the log keeps float32
	if h.First != 0.25 || h.Last != f32(0.29) || h.Best != f32(0.31) || h.LastStderr != f32(0.0137) || h.FirstStep != 25 || h.LastStep != 100 || h.Evaluations != 4 || !h.HigherIsBetter {
		t.Errorf("hellaswag %+v", h)
	}
	if w.Best != f32(2.4) || w.HigherIsBetter || !math.IsNaN(w.LastStderr) {
		t.Errorf("bpb %+v", w)
	}
	sum, err := Write(Input{RunDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(sum.Path)
	for _, want := range []string{"## Benchmarks", "| bench/hellaswag/acc_norm | 0.2500 (25) | 0.2900 (100) | 0.0137 | 0.3100 | 4 |", "| bpb/wiki | 3.1000 (25) | 2.5000 (100) | — | 2.4000 | 4 |", "![bench](bench.png)", "![bpb](bpb.png)"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	plain := t.TempDir()
	writeMetrics(t, plain, 100, 0)
	sum, err = Write(Input{RunDir: plain})
	if err != nil {
		t.Fatal(err)
	}
	md, _ = os.ReadFile(sum.Path)
	if strings.Contains(string(md), "## Benchmarks") || strings.Contains(string(md), "bench.png") {
		t.Error("a run without in-loop benchmarks got a benchmark section or plot")
	}
}
