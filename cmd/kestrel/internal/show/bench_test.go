package show

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/kestrel-lm/kestrel/internal/model"
	"github.com/kestrel-lm/kestrel/internal/modelbench"
	"github.com/kestrel-lm/kestrel/internal/stepbench"
	"github.com/kestrel-lm/kestrel/internal/tokbench"
)

// stepFixture is a step benchmark with three ops: one with GEMMs and the
// micro-kernel's fraction of the peak, one without FLOPs, one with GEMMs
// but no kernel fraction.
func stepFixture() stepbench.StepBench {
	return stepbench.StepBench{TokensPerSec: 12345.678, MFU: 0.123456, StepSec: 0.0123456, PeakRSSMB: 99.5, Threads: 2, Batch: 4, Seq: 64, Steps: 5,
		Params: 900000, FLOPsPerToken: 5.4e6, PeakGFLOPS: 100.5, PeakSource: "cached", PeakProbeGFLOPS: 95.25, ArenaBytes: 3 << 20, LossFirst: 4.5, LossLast: 4.25,
		Ops: []stepbench.OpTime{{Name: "matmul", MS: 5.5, Share: 0.6, GFLOP: 1.2, GFLOPS: 218.1, PctPeak: 0.9, GemmPack: 0.1, GemmKernel: 0.8, GemmOther: 0.1, KernelPctPeak: 0.95},
			{Name: "softmax", MS: 1.25, Share: 0.2}, {Name: "attn", MS: 1, Share: 0.1, GFLOP: 0.1, GFLOPS: 100, PctPeak: 0.5, GemmPack: 0.2, GemmKernel: 0.7, GemmOther: 0.1}}}
}

// TestStepBench: kestrel bench step's output of a result with ops — the
// JSON (the step's object with the MFU bounds, then one per op) and the
// text (the line, then the ops table ending in the bounds) — and of one
// without (one object, no bounds).
func TestStepBench(t *testing.T) {
	r := stepFixture()
	tab := StepOps(r)
	if lines := strings.Split(tab, "\n"); len(lines) != len(r.Ops)+2 || !strings.Contains(lines[0], "GFLOP/s") ||
		!strings.HasPrefix(strings.TrimSpace(lines[len(lines)-1]), "MFU ") {
		t.Errorf("table:\n%s", tab)
	}
	if f := OpFields(r.Ops[0], "tiny", r.Threads); f["op"] != "step_op" || f["name"] != r.Ops[0].Name {
		t.Errorf("fields %v", f)
	}
	var buf bytes.Buffer
	if err := StepBench(&buf, []stepbench.StepBench{r}, "tiny", true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1+len(r.Ops) {
		t.Fatalf("%d JSON lines for %d ops", len(lines), len(r.Ops))
	}
	bd := r.Bounds()
	for i, l := range lines {
		var f map[string]any
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, l)
		}
		if want := map[bool]string{true: "step", false: "step_op"}[i == 0]; f["op"] != want || f["preset"] != "tiny" {
			t.Errorf("line %d: op %v preset %v, want %s tiny", i+1, f["op"], f["preset"], want)
		}
		if i == 0 && (f["mfu_bound_kernels"] != round3(bd.Kernels) || f["mfu_mean"] != round3(bd.Mean) ||
			f["mfu_bound_flop_ops"] != round3(bd.FLOPOps) || f["mfu_bound_flop_ops_optimizer"] != round3(bd.FLOPOpsOptimizer) ||
			f["peak_probe_gflops"] != 95.25) {
			t.Errorf("step object %v, bounds %+v", f, bd)
		}
	}
	buf.Reset()
	if err := StepBench(&buf, []stepbench.StepBench{r}, "tiny", false); err != nil {
		t.Fatal(err)
	}
	if want := StepLine(r, "tiny") + "\n" + tab + "\n"; buf.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", buf.String(), want)
	}
	r.Ops, r.PeakProbeGFLOPS = nil, 0
	buf.Reset()
	if err := StepBench(&buf, []stepbench.StepBench{r}, "tiny", true); err != nil || strings.Count(buf.String(), "\n") != 1 ||
		strings.Contains(buf.String(), "mfu_bound") || StepFields(r, "x")["peak_probe_gflops"] != 0.0 {
		t.Errorf("without Ops, JSON: %q, err %v", buf.String(), err)
	}
}

// TestStepBenchScaling: a result on more threads than the 1-thread first
// one carries scaling_efficiency; the first does not.
func TestStepBenchScaling(t *testing.T) {
	one, two := stepFixture(), stepFixture()
	one.Threads, one.Ops, one.TokensPerSec = 1, nil, 1000
	two.Threads, two.Ops, two.TokensPerSec = 2, nil, 1500
	var buf bytes.Buffer
	if err := StepBench(&buf, []stepbench.StepBench{one, two}, "tiny", true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || strings.Contains(lines[0], "scaling_efficiency") || !strings.Contains(lines[1], `"scaling_efficiency":0.75`) {
		t.Errorf("JSON lines:\n%s", buf.String())
	}
}

// TestModelBench: the JSON fields and the line of kestrel bench eval and
// kestrel bench sample.
func TestModelBench(t *testing.T) {
	m, err := model.New(model.Config{Vocab: 37, DModel: 16, NLayers: 2, NHeads: 4, NKVHeads: 2, MLPHidden: 24, SeqLen: 12,
		RopeTheta: 10000, NormEps: 1e-5, QKNorm: true, Tied: true, NoPEEvery: 2, InitStd: 0.2}, 1)
	if err != nil {
		t.Fatal(err)
	}
	e := modelbench.EvalResult{ForwardOnlyTPS: 1000.5, ForwardTPS: 900, TrainTPS: 300, Ratio: 3.3333, Batch: 3, Seq: 12, Pairs: 3, Model: m}
	f := EvalBenchFields(e, "tiny")
	for _, k := range []string{"forward_only_tokens_per_sec", "train_tokens_per_sec", "ratio_vs_train", "params"} {
		if _, ok := f[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if f["ratio_vs_train"] != 3.333 || f["d_model"] != 16 || f["params"] != m.NumParams() {
		t.Errorf("fields %v", f)
	}
	if l := EvalBenchLine(e, "tiny"); !strings.HasPrefix(l, "tiny eval: forward-only 1000 tokens/s") {
		t.Errorf("line %q", l)
	}
	s := modelbench.SampleResult{CacheTPS: 500, NoCacheTPS: 100, Speedup: 5, Prompt: 3, Tokens: 30, Pairs: 2, Source: "random init", Model: m}
	if f := SampleBenchFields(s, "tiny"); f["tokens"] != 30 || f["op"] != "sample" || f["vocab"] != 37 {
		t.Fatalf("fields %v", f)
	}
	if l := SampleBenchLine(s, "tiny"); !strings.HasPrefix(l, "tiny sample (random init): KV cache 500 tokens/s") {
		t.Errorf("line %q", l)
	}
}

// TestTokbenchLine: the encoding is named unless it is r50k_base, and the
// documents that differ from tiktoken-go are counted.
func TestTokbenchLine(t *testing.T) {
	for _, c := range []struct {
		r    tokbench.Result
		want string
	}{
		{tokbench.Result{Impl: "kestrel", Threads: 2, MBPerS: 12.5, MB: 1.5, Tokens: 1000}, "kestrel      threads=2     12.50 MB/s  (1.5 MB, 1000 tokens)"},
		{tokbench.Result{Impl: "kestrel", Encoding: "cl100k_base", Threads: 1, MBPerS: 3, MB: 1.5, Tokens: 1000, Ratio: 2.5, DocsDiffering: 1},
			"cl100k_base  kestrel      threads=1      3.00 MB/s  (1.5 MB, 1000 tokens)  2.50× tiktoken-go  (1 documents differ from tiktoken-go: its regexp2 cuts newline runs short)"},
		{tokbench.Result{Impl: "tiktoken-go", Encoding: "r50k_base", Threads: 1}, "tiktoken-go  threads=1      0.00 MB/s  (0.0 MB, 0 tokens)"},
	} {
		if got := TokbenchLine(c.r); got != c.want {
			t.Errorf("got  %q\nwant %q", got, c.want)
		}
	}
}

// TestStepBenchParallel: with passes side by side the ops table has an
// ms/pass column and says its rates are per pass on one thread, and each
// op's JSON object carries pass_ms and parallel; with one pass a step the
// table's header and the op objects are as they were.
func TestStepBenchParallel(t *testing.T) {
	r := stepFixture()
	one := strings.Split(StepOps(r), "\n")[0]
	if want := "  op (2 threads)             ms/step   share    GFLOP   GFLOP/s  of peak   pack kernel  other kernel/peak"; one != want {
		t.Errorf("one pass a step, header\n%q, want\n%q", one, want)
	}
	var buf bytes.Buffer
	if err := StepBench(&buf, []stepbench.StepBench{r}, "tiny", true); err != nil || strings.Contains(buf.String(), "pass_ms") {
		t.Errorf("one pass a step, JSON: %s (err %v)", buf.String(), err)
	}
	r.Parallel = 2
	r.Ops[0].PassMS = 2.75
	tab := strings.Split(StepOps(r), "\n")
	if len(tab) != len(r.Ops)+3 || !strings.Contains(tab[0], "2 passes; rates per pass on 1 thread") || !strings.Contains(tab[1], "ms/pass") ||
		!strings.Contains(tab[2], " 2.75 ") {
		t.Errorf("parallel table:\n%s", strings.Join(tab, "\n"))
	}
	buf.Reset()
	if err := StepBench(&buf, []stepbench.StepBench{r}, "tiny", true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var f map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil || f["pass_ms"] != 2.75 || f["parallel"] != 2.0 {
		t.Errorf("parallel op object %v (err %v)", f, err)
	}
}
