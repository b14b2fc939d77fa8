package train

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kestrel-lm/kestrel/internal/model"
)

// TestOpTimes: self times become per-step milliseconds, shares of the step
// (other takes what no span covered), and rates against the peak for the
// ops with FLOPs; largest first, ties by name.
func TestOpTimes(t *testing.T) {
	ms := time.Millisecond
	got := opTimes(map[string]time.Duration{"gemm": 30 * ms, "norm": 10 * ms}, 50*ms, 2,
		map[string]float64{"gemm": 3e9, "unused": 1e9}, 100)
	want := []OpTime{
		{Name: "gemm", MS: 15, Share: 0.6, GFLOP: 3, GFLOPS: 200, PctPeak: 2},
		{Name: "norm", MS: 5, Share: 0.2},
		{Name: OpOther, MS: 5, Share: 0.2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("opTimes:\n got %+v\nwant %+v", got, want)
	}
	// Spans that add up to more than the wall time (clock reads between
	// steps) leave other at zero, never negative.
	got = opTimes(map[string]time.Duration{"a": 11 * ms}, 10*ms, 1, nil, 0)
	if got[1].Name != OpOther || got[1].MS != 0 || got[0].PctPeak != 0 {
		t.Errorf("overfull spans: %+v", got)
	}
}

// TestOpTimerNesting: a span's self time excludes the spans inside it, and
// an End without a Begin is ignored.
func TestOpTimerNesting(t *testing.T) {
	tm := &opTimer{self: map[string]time.Duration{}}
	t0 := time.Now()
	tm.Begin("outer", 0)
	time.Sleep(2 * time.Millisecond)
	tm.Begin("inner", 0)
	time.Sleep(5 * time.Millisecond)
	tm.End()
	tm.End()
	tm.End()
	wall := time.Since(t0)
	in, out := tm.self["inner"], tm.self["outer"]
	if in < 5*time.Millisecond || out < 2*time.Millisecond || in+out > wall {
		t.Errorf("inner %v, outer %v (self), wall %v", in, out, wall)
	}
}

// TestBenchStepOps: with Ops, a benchmarked step is split into the model's
// ops, zero_grads, the optimizer and other; the shares sum to 1, the FLOPs
// are model.OpFLOPs' and sum to the MFU's count; without Ops there are
// none.
func TestBenchStepOps(t *testing.T) {
	cfg := model.Config{Vocab: 64, DModel: 16, NLayers: 2, NHeads: 2, NKVHeads: 2, MLPHidden: 32, SeqLen: 8, RopeTheta: 10000, NormEps: 1e-5, InitStd: 0.02}
	opt := StepBenchOptions{Model: cfg, Batch: 2, Steps: 3, Warmup: 1, PeakGFLOPS: 100, Ops: true}
	r, err := BenchStep(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	fl := m.OpFLOPs(opt.Batch * cfg.SeqLen)
	seen := map[string]bool{}
	var share, gflop float64
	for _, o := range r.Ops {
		seen[o.Name] = true
		share += o.Share
		gflop += o.GFLOP
		if o.MS < 0 || o.Share < 0 {
			t.Errorf("%s: %v ms, share %v", o.Name, o.MS, o.Share)
		}
		if o.GFLOP != fl[o.Name]/1e9 {
			t.Errorf("%s: %v GFLOP, model.OpFLOPs %v", o.Name, o.GFLOP, fl[o.Name]/1e9)
		}
		if o.GFLOP > 0 && math.Abs(o.PctPeak-o.GFLOPS/100) > 1e-12 {
			t.Errorf("%s: %v GFLOP/s is %v of the 100 GFLOP/s peak", o.Name, o.GFLOPS, o.PctPeak)
		}
	}
	for _, name := range []string{OpZeroGrads, OpOptimizer, OpOther, model.OpEmbedding, model.OpCrossEntropy} {
		if !seen[name] {
			t.Errorf("no %s in %v", name, seen)
		}
	}
	for name := range fl {
		if !seen[name] {
			t.Errorf("op %s has FLOPs but no time", name)
		}
	}
	if math.Abs(share-1) > 1e-9 {
		t.Errorf("shares sum to %v", share)
	}
	if want := r.FLOPsPerToken * float64(opt.Batch*cfg.SeqLen) / 1e9; math.Abs(gflop-want) > 1e-9*want {
		t.Errorf("ops hold %v GFLOP, the step %v", gflop, want)
	}
	for i := 1; i < len(r.Ops); i++ {
		if r.Ops[i].MS > r.Ops[i-1].MS {
			t.Errorf("not largest first: %s %v after %s %v", r.Ops[i].Name, r.Ops[i].MS, r.Ops[i-1].Name, r.Ops[i-1].MS)
		}
	}
	tab := r.OpsTable()
	if lines := strings.Split(tab, "\n"); len(lines) != len(r.Ops)+1 || !strings.Contains(lines[0], "GFLOP/s") {
		t.Errorf("table:\n%s", tab)
	}
	if f := r.Ops[0].OpFields("tiny", r.Threads); f["op"] != "step_op" || f["name"] != r.Ops[0].Name {
		t.Errorf("fields %v", f)
	}
	// As kestrel bench step prints it: the step's object, then one per op.
	var buf bytes.Buffer
	if err := WriteStepBench(&buf, []StepBench{r}, "tiny", true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1+len(r.Ops) {
		t.Fatalf("%d JSON lines for %d ops", len(lines), len(r.Ops))
	}
	for i, l := range lines {
		var f map[string]any
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		if want := map[bool]string{true: "step", false: "step_op"}[i == 0]; f["op"] != want || f["preset"] != "tiny" {
			t.Errorf("line %d: op %v preset %v, want %s tiny", i+1, f["op"], f["preset"], want)
		}
	}
	buf.Reset()
	if err := WriteStepBench(&buf, []StepBench{r}, "tiny", false); err != nil {
		t.Fatal(err)
	}
	if want := r.Line("tiny") + "\n" + tab + "\n"; buf.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", buf.String(), want)
	}
	opt.Ops = false
	r, err = BenchStep(context.Background(), opt)
	if err != nil || r.Ops != nil {
		t.Fatalf("without Ops: %v ops, err %v", len(r.Ops), err)
	}
	buf.Reset()
	if err := WriteStepBench(&buf, []StepBench{r}, "tiny", true); err != nil || strings.Count(buf.String(), "\n") != 1 {
		t.Errorf("without Ops, JSON: %q, err %v", buf.String(), err)
	}
}
